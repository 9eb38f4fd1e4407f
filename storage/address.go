package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/net/idna"
)

// AddressKey is the one form of an email address that recipients are
// keyed, matched and de-duplicated by: suppressions are stored under it,
// messages_by_recipient holds it, and a message's recipients are written
// in it. It is the address in lower case, as keys always were, with its
// domain in A-label form (RFC 5890 §2.3.2.1: "xn--" labels) under the IDNA
// lookup profile that sending domains are normalised with, so that the two
// spellings of an internationalised domain name, exämple.org and
// xn--exmple-cua.org, are one key and one suppression stops both.
//
// A domain that is not ASCII and that the profile refuses is kept in lower
// case and reported by err, for the callers that validate input; the
// callers that only look a key up use the key either way. An ASCII domain
// is only lower-cased: an address literal ([192.0.2.1]) or a name the
// profile would refuse (an underscore) keeps the key it always had.
// AddressKey(AddressKey(a)) is AddressKey(a), and so is
// AddressKey(strings.ToLower(a)).
func AddressKey(addr string) (key string, err error) {
	addr = strings.ToLower(addr)
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return addr, nil
	}
	domain := addr[at+1:]
	if isASCII(domain) {
		return addr, nil
	}
	a, err := idna.Lookup.ToASCII(domain)
	if err != nil {
		return addr, fmt.Errorf("domain %q is not a valid internationalised domain name: %w", domain, err)
	}
	return addr[:at+1] + strings.ToLower(a), nil
}

// addressKey is AddressKey for a lookup: the key, whether or not the
// domain was valid.
func addressKey(addr string) string {
	k, _ := AddressKey(addr)
	return k
}

func isASCII[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// migrateAddressKeys (v19) moves what was keyed by a recipient address
// whose domain was stored in Unicode (the lower-cased form before
// AddressKey) to the key of its A-label form, so that an entry made under
// one spelling is found under both:
//
//   - a suppression's key and record; when the account already has an
//     entry for the other spelling and the same stream, that entry is
//     kept, this one dropped and the list count lowered;
//   - the entries of messages_by_recipient;
//   - the recipients of the messages those entries name, which the queue
//     delivers to and matches bounces and filters against (a recipient is
//     left as it was when the message already has its other spelling).
//
// Only keys holding a byte outside ASCII can change; the rest are not
// read twice. Events keep the address they were recorded with: they are
// history, and EventFilter matches either spelling.
func migrateAddressKeys(tx kvTx) error {
	if err := rekeySuppressions(tx); err != nil {
		return err
	}
	ids, err := rekeyRecipientIndex(tx)
	if err != nil {
		return err
	}
	msgs := tx.Bucket(bucketMessages)
	for _, key := range ids {
		v := msgs.Get(key)
		if v == nil {
			continue
		}
		var m Message
		if err := decodeMessage(v, &m); err != nil {
			return fmt.Errorf("decode %q: %w", key, err)
		}
		changed := false
		for i := range m.Recipients {
			k := addressKey(m.Recipients[i].Email)
			if k == m.Recipients[i].Email || slices.ContainsFunc(m.Recipients, func(r Recipient) bool { return r.Email == k }) {
				continue
			}
			m.Recipients[i].Email, changed = k, true
		}
		if changed {
			if err := msgs.Put(key, encodeMessage(&m)); err != nil {
				return err
			}
		}
	}
	return nil
}

// rekeySuppressions is v19's part for suppressions/.
func rekeySuppressions(tx kvTx) error {
	b := tx.Bucket(bucketSuppressions)
	if b == nil {
		return nil
	}
	type move struct {
		accountID string
		from, to  []byte
		value     []byte
	}
	var moves []move
	err := b.ForEach(func(k, v []byte) error {
		if isASCII(k) {
			return nil
		}
		parts := bytes.Split(k, []byte{sep})
		if len(parts) < 2 || len(parts) > 3 {
			return nil
		}
		recipient := addressKey(string(parts[1]))
		if recipient == string(parts[1]) {
			return nil // a domain IDNA refuses keeps its key
		}
		var s Suppression
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("suppression %q: %w", k, err)
		}
		s.Recipient = recipient
		value, err := json.Marshal(s)
		if err != nil {
			return err
		}
		parts[1] = []byte(recipient)
		moves = append(moves, move{string(parts[0]), bytes.Clone(k), bytes.Join(parts, []byte{sep}), value})
		return nil
	})
	if err != nil {
		return err
	}
	counts := tx.Bucket(bucketCounts)
	for _, m := range moves {
		if err := b.Delete(m.from); err != nil {
			return err
		}
		if b.Get(m.to) == nil {
			if err := b.Put(m.to, m.value); err != nil {
				return err
			}
			continue
		}
		// Both spellings were suppressed: one entry is left of two.
		ck := join(collectionSuppressions, m.accountID)
		if n := getU64(counts.Get(ck)); n > 0 {
			if err := counts.Put(ck, putU64(n-1)); err != nil {
				return err
			}
		}
	}
	return nil
}

// rekeyRecipientIndex is v19's part for messages_by_recipient/: it moves
// the entries whose address changes and returns the messages keys
// (account·id) of the messages they name, each once, in key order.
func rekeyRecipientIndex(tx kvTx) ([][]byte, error) {
	b := tx.Bucket(bucketMessagesByRecipient)
	if b == nil {
		return nil, nil
	}
	type move struct{ from, to []byte }
	var moves []move
	seen := map[string]bool{}
	var ids [][]byte
	err := b.ForEach(func(k, _ []byte) error {
		if isASCII(k) {
			return nil
		}
		first, last := bytes.IndexByte(k, sep), bytes.LastIndexByte(k, sep)
		if first < 0 || last <= first {
			return nil
		}
		accountID, value, id := string(k[:first]), string(k[first+1:last]), string(k[last+1:])
		if key := addressKey(value); key != value {
			moves = append(moves, move{bytes.Clone(k), join(accountID, key, id)})
		}
		if msg := string(join(accountID, id)); !seen[msg] {
			seen[msg] = true
			ids = append(ids, []byte(msg))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, m := range moves {
		if err := b.Delete(m.from); err != nil {
			return nil, err
		}
		if err := b.Put(m.to, nil); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(ids, bytes.Compare)
	return ids, nil
}
