package storage

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Secrets at rest. Every secret the server must read back (DKIM private
// keys, webhook signing secrets, the server secret that link and bounce
// address keys derive from) is stored sealed with AES-256-GCM under a key
// kept outside the database, in the secret key file. A copy of mailbolt.db
// or of a backup alone gives none of them.
//
// A sealed value is text: "s1:" and the base64 (standard, unpadded) of a
// 12-byte random nonce followed by the ciphertext and its 16-byte tag. The
// additional data is the value's context, which names the record and field
// it belongs to (for example "dkim/<domain id>/<selector>"), so a sealed
// value copied onto another record does not open there.
//
// Every class of secret is listed in secretClasses (secrets.go): the
// migration that sealed the existing ones, rotation and the restore check
// walk that one list, so a class added there is sealed, rotated and checked
// like the others.

// SecretKeyFileName is the default name of the key file, beside the
// database file.
const SecretKeyFileName = "secret.key"

// ErrSecretKey is returned when the secret key file is missing, malformed,
// or holds another key than the one the database's secrets are sealed with.
// Its message names the file.
var ErrSecretKey = errors.New("storage: wrong or missing secret key")

const (
	sealPrefix = "s1:"
	keyCheck   = "mailbolt secret key check"
	ctxCheck   = "meta/secret_key_check"
)

var keySecretKeyCheck = []byte("secret_key_check")

// sealer seals and opens values under one key.
type sealer struct {
	aead cipher.AEAD
	path string // the key file, for messages
}

func newSealer(key []byte, path string) (*sealer, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("%w: %s does not hold a 256-bit key (64 hex digits)", ErrSecretKey, path)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead, path: path}, nil
}

// seal encrypts plain for the record field named by context.
func (s *sealer) seal(context string, plain []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	raw := s.aead.Seal(nonce, nonce, plain, []byte(context))
	return append([]byte(sealPrefix), base64.RawStdEncoding.EncodeToString(raw)...)
}

// open decrypts a value sealed for context.
func (s *sealer) open(context string, sealed []byte) ([]byte, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: no secret key was loaded to open %s", ErrSecretKey, context)
	}
	text, ok := strings.CutPrefix(string(sealed), sealPrefix)
	if !ok {
		return nil, fmt.Errorf("storage: %s is not sealed", context)
	}
	raw, err := base64.RawStdEncoding.DecodeString(text)
	if err != nil || len(raw) < s.aead.NonceSize()+s.aead.Overhead() {
		return nil, fmt.Errorf("storage: the sealed value of %s is malformed", context)
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], []byte(context))
	if err != nil {
		return nil, fmt.Errorf("%w: the key in %s does not open %s", ErrSecretKey, s.path, context)
	}
	return plain, nil
}

// checkValue is what meta/secret_key_check holds: a known text sealed
// under the key, so a start with another key is refused before anything
// else reads a secret.
func (s *sealer) checkValue() []byte { return s.seal(ctxCheck, []byte(keyCheck)) }

// verify reports whether check was sealed with s's key.
func (s *sealer) verify(check []byte, dbPath string) error {
	got, err := s.open(ctxCheck, check)
	if err != nil || string(got) != keyCheck {
		return fmt.Errorf("%w: the key in %s is not the key the secrets in %s are sealed with: "+
			"point --secret-key-file (MAILBOLT_SECRET_KEY_FILE) at the key file kept with this database", ErrSecretKey, s.path, dbPath)
	}
	return nil
}

// readKeyFile reads a key file: 64 hex digits, surrounding space ignored.
// A missing file is fs.ErrNotExist.
func readKeyFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("%w: %s does not hold a 256-bit key (64 hex digits)", ErrSecretKey, path)
	}
	return key, nil
}

// newKey makes a random 256-bit key.
func newKey() []byte {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic(err)
	}
	return key
}

// writeKeyFile writes key to a new file at path (mode 0600), fsynced with
// its directory. It never replaces an existing file.
func writeKeyFile(path string, key []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create the secret key file: %w", err)
	}
	_, err = f.WriteString(hex.EncodeToString(key) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("write the secret key file %s: %w", path, err)
	}
	return nil
}

// keyFilePath is the key file of the database at dbPath under opts.
func keyFilePath(dbPath string, opts Options) string {
	if opts.SecretKeyFile != "" {
		return opts.SecretKeyFile
	}
	return filepath.Join(filepath.Dir(dbPath), SecretKeyFileName)
}

// loadSealer reads the key file for a database whose key-check value is
// check (nil when no secret is sealed yet) and returns its sealer and
// whether it created the file. A missing file is created only when create
// is set and the database holds no sealed secrets; a key that does not
// open check is refused, unless an interrupted rotation left the right key
// in <file>.new, which then takes the file's place.
func loadSealer(dbPath, keyPath string, check []byte, create bool) (_ *sealer, created bool, err error) {
	key, err := readKeyFile(keyPath)
	switch {
	case errors.Is(err, fs.ErrNotExist) && check == nil && create:
		key = newKey()
		if err := writeKeyFile(keyPath, key); err != nil {
			return nil, false, err
		}
		created = true
	case errors.Is(err, fs.ErrNotExist) && check == nil:
		return nil, false, fmt.Errorf("%w: the secret key file %s does not exist (give --secret-key-file)", ErrSecretKey, keyPath)
	case errors.Is(err, fs.ErrNotExist):
		if s, ok := finishRotation(dbPath, keyPath, check); ok {
			return s, false, nil
		}
		return nil, false, fmt.Errorf("%w: the secret key file %s does not exist, but the secrets in %s are sealed: "+
			"put back the key file kept with this database, or point --secret-key-file (MAILBOLT_SECRET_KEY_FILE) at it", ErrSecretKey, keyPath, dbPath)
	case err != nil:
		return nil, false, err
	}
	s, err := newSealer(key, keyPath)
	if err != nil {
		return nil, false, err
	}
	if check != nil {
		if verr := s.verify(check, dbPath); verr != nil {
			if s, ok := finishRotation(dbPath, keyPath, check); ok {
				return s, false, nil
			}
			return nil, false, verr
		}
	}
	return s, created, nil
}

// finishRotation completes a rotation that committed its database
// transaction but stopped before the new key file took the old one's
// place: <keyPath>.new holds the key check's key.
func finishRotation(dbPath, keyPath string, check []byte) (*sealer, bool) {
	key, err := readKeyFile(keyPath + ".new")
	if err != nil {
		return nil, false
	}
	s, err := newSealer(key, keyPath)
	if err != nil || s.verify(check, dbPath) != nil {
		return nil, false
	}
	if os.Rename(keyPath+".new", keyPath) != nil || syncDir(filepath.Dir(keyPath)) != nil {
		return nil, false
	}
	return s, true
}

// WriteNewSecretKey writes a new random secret key to path (mode 0600),
// refusing a file that already exists. The PostgreSQL engine never creates
// its key file: one node's operator makes it once with this, and every
// node is given a copy.
func WriteNewSecretKey(path string) error { return writeKeyFile(path, newKey()) }
