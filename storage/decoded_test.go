package storage

import (
	"reflect"
	"testing"
	"time"
)

// fillAll sets every field of v (a pointer to a struct) to something not
// zero, slices with one element, pointers to filled values.
func fillAll(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(v.Elem())
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAll(v.Field(i))
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillAll(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(7)
	case reflect.Uint8:
		v.SetUint(7)
	}
}

// shared reports a pointer, slice or map that a and b both reach.
func shared(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return ""
		}
		if a.Pointer() == b.Pointer() {
			return path
		}
		return shared(a.Elem(), b.Elem(), path)
	case reflect.Slice:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			return path
		}
		for i := range a.Len() {
			if p := shared(a.Index(i), b.Index(i), path+"[]"); p != "" {
				return p
			}
		}
	case reflect.Map:
		if !a.IsNil() && a.Pointer() == b.Pointer() {
			return path
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if p := shared(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); p != "" {
				return p
			}
		}
	}
	return ""
}

// Each clone is a deep copy of every field, including fields added later:
// a cached record handed out must not share memory with the cache.
func TestDecodedClonesAreDeep(t *testing.T) {
	check := func(name string, v any, clone func(any) any) {
		fillAll(reflect.ValueOf(v).Elem())
		orig := reflect.ValueOf(v).Elem().Interface()
		c := clone(orig)
		if !reflect.DeepEqual(c, orig) {
			t.Errorf("%s: the clone differs: %+v", name, c)
		}
		if p := shared(reflect.ValueOf(orig), reflect.ValueOf(c), name); p != "" {
			t.Errorf("%s: the clone shares %s with the original: add it to the clone function", name, p)
		}
	}
	check("Domain", &Domain{}, func(v any) any { return cloneDomain(v.(Domain)) })
	check("APIKey", &APIKey{}, func(v any) any { return cloneAPIKey(v.(APIKey)) })
	check("Account", &Account{}, func(v any) any { return v.(Account) })
}

// A record read twice comes from the cache the second time: changing the
// first copy does not change the second, and a write is seen at once.
func TestDecodedRecordsFollowWrites(t *testing.T) {
	db := openTest(t)
	now := time.Now().UTC().Truncate(time.Second)
	d := Domain{ID: "d1", AccountID: "a1", Name: "example.com", Status: "verified", CreatedAt: now, VerifiedAt: &now,
		DKIMKeys: []DomainKey{{Selector: "s1", Algorithm: "ed25519", PrivateKey: []byte("secret key bytes"), PublicKey: "pub", CreatedAt: now, ActivatedAt: &now}},
		Checks:   []DNSCheck{{Purpose: "dkim", Name: "s1._domainkey.example.com", Status: "ok", Found: []string{"v=DKIM1"}}}}
	k := APIKey{ID: "k1", AccountID: "a1", Name: "key", Hash: []byte("hash"), Scopes: []string{"*"}, CreatedAt: now}
	if err := db.Update(func(tx *Tx) error {
		if err := tx.PutAccount(Account{ID: "a1", Name: "one", Plan: "pro", CreatedAt: now}); err != nil {
			return err
		}
		if err := tx.InsertAPIKey(k); err != nil {
			return err
		}
		return tx.InsertDomain(d)
	}); err != nil {
		t.Fatal(err)
	}
	read := func() (got Domain, key APIKey, acct Account) {
		t.Helper()
		if err := db.View(func(tx *Tx) error {
			var err error
			if got, err = tx.DomainByID("d1"); err != nil {
				return err
			}
			if key, err = tx.APIKeyByHash([]byte("hash")); err != nil {
				return err
			}
			acct, err = tx.Account("a1")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return got, key, acct
	}
	for round := range 3 {
		got, key, acct := read()
		if !reflect.DeepEqual(got, d) || !reflect.DeepEqual(key, k) || acct.Name != "one" {
			t.Fatalf("round %d: read %+v / %+v / %+v", round, got, key, acct)
		}
		// Scribble over what was handed out.
		got.DKIMKeys[0].PrivateKey[0] ^= 0xff
		*got.VerifiedAt = time.Time{}
		got.Checks[0].Found[0] = "changed"
		key.Scopes[0] = "messages:read"
		key.Hash[0] = 'X'
	}
	d.Status, d.StatusReason = "failed", "gone"
	revoked := now.Add(time.Hour)
	k.RevokedAt = &revoked
	if err := db.Update(func(tx *Tx) error {
		if err := tx.UpdateDomain(d); err != nil {
			return err
		}
		if err := tx.PutAccount(Account{ID: "a1", Name: "two", Plan: "pro", CreatedAt: now}); err != nil {
			return err
		}
		return tx.UpdateAPIKey(k)
	}); err != nil {
		t.Fatal(err)
	}
	got, key, acct := read()
	if got.Status != "failed" || key.RevokedAt == nil || acct.Name != "two" {
		t.Errorf("after the writes: %s, revoked %v, %s", got.Status, key.RevokedAt, acct.Name)
	}
}
