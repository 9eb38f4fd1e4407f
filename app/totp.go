package app

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"mailbolt/storage"
)

// The dashboard's optional second factor: TOTP (RFC 6238) with the
// parameters every authenticator app takes by default — HMAC-SHA-1, 30 s
// steps, 6 digits — and ten one-time recovery codes.
const (
	totpStep       = 30 * time.Second
	totpDigits     = 6
	totpSeedLen    = 20 // RFC 4226 §4: at least 128 bits; 160 recommended
	recoveryCodes  = 10
	recoveryLength = 16 // base32 characters: 80 bits
)

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// TOTPCode is the code of seed for the time step holding t (RFC 6238 §4,
// over RFC 4226 §5.3's dynamic truncation).
func TOTPCode(seed []byte, t time.Time) string {
	return hotp(seed, t.Unix()/int64(totpStep/time.Second))
}

func hotp(seed []byte, counter int64) string {
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], uint64(counter))
	m := hmac.New(sha1.New, seed)
	m.Write(msg[:])
	sum := m.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	v := binary.BigEndian.Uint32(sum[off:off+4]) & 0x7fffffff
	mod := uint32(1)
	for range totpDigits {
		mod *= 10
	}
	return fmt.Sprintf("%0*d", totpDigits, v%mod)
}

// checkTOTP accepts code for seed at now, one step of clock drift either
// way (RFC 6238 §5.2), and only for a step after last (§5.2: a code is
// used once). It returns the step accepted.
func checkTOTP(seed []byte, code string, now time.Time, last int64) (int64, bool) {
	code = strings.ReplaceAll(strings.TrimSpace(code), " ", "")
	if len(code) != totpDigits || len(seed) == 0 {
		return 0, false
	}
	step := now.Unix() / int64(totpStep/time.Second)
	for _, s := range []int64{step - 1, step, step + 1} {
		if s > last && subtle.ConstantTimeCompare([]byte(hotp(seed, s)), []byte(code)) == 1 {
			return s, true
		}
	}
	return 0, false
}

// TOTPSetup is a key being enrolled: its base32 text and the otpauth:// URI
// authenticator apps take.
type TOTPSetup struct {
	Secret string
	URI    string
}

// BeginTOTP makes a new key for the session's person, pending until
// ConfirmTOTP sees a code made with it. A person whose second factor is on
// turns it off first.
func (a *App) BeginTOTP(s Session) (TOTPSetup, error) {
	seed := make([]byte, totpSeedLen)
	if _, err := rand.Read(seed); err != nil {
		return TOTPSetup{}, Internal(err)
	}
	err := a.db.Update(func(tx *storage.Tx) error {
		p, err := tx.Person(s.Email)
		if err != nil {
			return err
		}
		if len(p.TOTPSeed) > 0 {
			return Conflict("the second factor is already on; turn it off first")
		}
		p.TOTPPending = seed
		return tx.PutPerson(p)
	})
	if e := storageErr(err, "person"); e != nil {
		return TOTPSetup{}, e
	}
	secret := b32.EncodeToString(seed)
	label := url.PathEscape("Mailbolt:" + s.Email)
	q := url.Values{"secret": {secret}, "issuer": {"Mailbolt"}, "algorithm": {"SHA1"},
		"digits": {fmt.Sprint(totpDigits)}, "period": {fmt.Sprint(int(totpStep / time.Second))}}
	return TOTPSetup{Secret: secret, URI: "otpauth://totp/" + label + "?" + q.Encode()}, nil
}

// ConfirmTOTP turns the second factor on when code was made with the
// pending key, and returns the recovery codes, shown once (each works once
// in place of a code). A wrong code is 400 VALIDATION_ERROR.
func (a *App) ConfirmTOTP(s Session, code string) ([]string, error) {
	codes := make([]string, recoveryCodes)
	hashes := make([][]byte, recoveryCodes)
	for i := range codes {
		b := make([]byte, recoveryLength*5/8)
		if _, err := rand.Read(b); err != nil {
			return nil, Internal(err)
		}
		codes[i] = strings.ToLower(b32.EncodeToString(b))
		hashes[i] = HashSecret(codes[i])
	}
	now := a.Now()
	err := a.db.Update(func(tx *storage.Tx) error {
		p, err := tx.Person(s.Email)
		if err != nil {
			return err
		}
		if len(p.TOTPPending) == 0 {
			return Conflict("no second factor is being set up")
		}
		step, ok := checkTOTP(p.TOTPPending, code, now, 0)
		if !ok {
			return Validation("code", "is not the code your app shows now")
		}
		p.TOTPSeed, p.TOTPPending, p.TOTPLastStep, p.RecoveryCodes = p.TOTPPending, nil, step, hashes
		if err := tx.PutPerson(p); err != nil {
			return err
		}
		return a.audit(tx, s.Principal, action{"person.totp_on", s.Email})
	})
	if e := storageErr(err, "person"); e != nil {
		return nil, e
	}
	return codes, nil
}

// DisableTOTP turns the second factor off; it takes a current code or a
// recovery code (400 VALIDATION_ERROR otherwise).
func (a *App) DisableTOTP(s Session, code string) error {
	now := a.Now()
	err := a.db.Update(func(tx *storage.Tx) error {
		p, err := tx.Person(s.Email)
		if err != nil {
			return err
		}
		if len(p.TOTPSeed) == 0 {
			return nil
		}
		if !spendCode(&p, code, now) {
			return Validation("code", "is neither the code your app shows now nor an unused recovery code")
		}
		p.TOTPSeed, p.TOTPPending, p.TOTPLastStep, p.RecoveryCodes = nil, nil, 0, nil
		if err := tx.PutPerson(p); err != nil {
			return err
		}
		return a.audit(tx, s.Principal, action{"person.totp_off", s.Email})
	})
	return storageErr(err, "person")
}

// spendCode accepts a TOTP code (recording its step) or an unused
// recovery code (removing it) for p.
func spendCode(p *storage.Person, code string, now time.Time) bool {
	if step, ok := checkTOTP(p.TOTPSeed, code, now, p.TOTPLastStep); ok {
		p.TOTPLastStep = step
		return true
	}
	h := HashSecret(strings.ToLower(strings.TrimSpace(code)))
	if i := slices.IndexFunc(p.RecoveryCodes, func(c []byte) bool { return subtle.ConstantTimeCompare(c, h) == 1 }); i >= 0 {
		p.RecoveryCodes = slices.Delete(p.RecoveryCodes, i, i+1)
		return true
	}
	return false
}

// SecondFactor completes a login whose password was right: a current TOTP
// code or an unused recovery code lets the session in (401 UNAUTHORIZED
// otherwise, the session still waiting).
func (a *App) SecondFactor(s Session, code string) error {
	now := a.Now()
	var refused error
	err := a.db.Update(func(tx *storage.Tx) error {
		refused = nil
		cur, err := tx.Session(s.hash)
		if err != nil || !cur.SecondFactorDue {
			return errSessionEnded()
		}
		p, err := tx.Person(s.Email)
		if err != nil {
			return err
		}
		if p.CodesLockedUntil != nil && now.Before(*p.CodesLockedUntil) {
			return NewError(CodeRateLimitExceeded, fmt.Sprintf("too many wrong codes: codes are taken again after %s",
				p.CodesLockedUntil.UTC().Format(time.RFC3339)))
		}
		if !spendCode(&p, code, now) {
			// Counted in the person's record, which every node and
			// every session share: a guesser with the password gets
			// codeFailuresPerLock tries, then waits longer each time.
			p.CodeFailures++
			if p.CodeFailures%codeFailuresPerLock == 0 {
				until := now.Add(codeLock(p.CodeFailures))
				p.CodesLockedUntil = &until
			}
			refused = NewError(CodeUnauthorized, "the code is wrong or was used already")
			return tx.PutPerson(p)
		}
		p.CodeFailures, p.CodesLockedUntil = 0, nil
		if err := tx.PutPerson(p); err != nil {
			return err
		}
		cur.SecondFactorDue = false
		return tx.PutSession(s.hash, cur)
	})
	if e := storageErr(err, "person"); e != nil {
		return e
	}
	return refused
}

// codeFailuresPerLock wrong second-factor codes in a row lock the person's
// codes for codeLock: 15 minutes after the first five, doubling after
// each further five, at most a day.
const codeFailuresPerLock = 5

func codeLock(failures int) time.Duration {
	d := 15 * time.Minute
	for n := failures/codeFailuresPerLock - 1; n > 0 && d < 24*time.Hour; n-- {
		d *= 2
	}
	return min(d, 24*time.Hour)
}

// TOTPStatus reports whether the person's second factor is on, and how many
// recovery codes are left.
func (a *App) TOTPStatus(s Session) (on bool, recoveryLeft int, err error) {
	err = a.db.View(func(tx *storage.Tx) error {
		p, err := tx.Person(s.Email)
		on, recoveryLeft = len(p.TOTPSeed) > 0, len(p.RecoveryCodes)
		return err
	})
	return on, recoveryLeft, storageErr(err, "person")
}
