// Package password hashes and checks staff passwords with argon2id
// (golang.org/x/crypto/argon2), and applies the password rules: 12 to 128
// characters, not the account's email, not a common password.
package password

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Params are argon2id's cost parameters.
type Params struct {
	// MemoryKiB is the memory cost in KiB.
	MemoryKiB uint32
	// Time is the number of passes.
	Time uint32
	// Threads is the parallelism.
	Threads uint8
}

// Default are the production parameters: OWASP's argon2id recommendation
// (19 MiB, 2 passes, 1 thread). docs/auth.md gives the time per hash.
var Default = Params{MemoryKiB: 19 * 1024, Time: 2, Threads: 1}

const (
	saltLen = 16
	keyLen  = 32
)

// Hash returns the PHC string of pw under p:
// $argon2id$v=19$m=<KiB>,t=<passes>,p=<threads>$<salt>$<hash>, salt and
// hash in unpadded base64. The parameters travel with the hash, so
// raising them later still checks the old hashes.
func Hash(pw string, p Params) string {
	salt := make([]byte, saltLen)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails (Go 1.24+)
	key := argon2.IDKey([]byte(pw), salt, p.Time, p.MemoryKiB, p.Threads, keyLen)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		enc.EncodeToString(salt), enc.EncodeToString(key))
}

// ErrMalformed is returned by Check for a hash it cannot read.
var ErrMalformed = errors.New("password: malformed hash")

// Check reports whether pw matches the PHC string hash, in constant time.
func Check(pw, hash string) (bool, error) {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, ErrMalformed
	}
	var version int
	var p Params
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, ErrMalformed
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Time, &p.Threads); err != nil {
		return false, ErrMalformed
	}
	enc := base64.RawStdEncoding
	salt, err := enc.DecodeString(parts[4])
	if err != nil {
		return false, ErrMalformed
	}
	want, err := enc.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false, ErrMalformed
	}
	got := argon2.IDKey([]byte(pw), salt, p.Time, p.MemoryKiB, p.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// Length bounds, in characters.
const (
	MinLength = 12
	MaxLength = 128
)

//go:embed common.txt
var commonList []byte

// common is the bundled list of common passwords, lower-cased.
var common = func() map[string]bool {
	m := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(commonList))
	for sc.Scan() {
		if w := strings.TrimSpace(sc.Text()); w != "" && !strings.HasPrefix(w, "#") {
			m[strings.ToLower(w)] = true
		}
	}
	return m
}()

// Problem returns why pw may not be the password of the account with
// email, or "" when it may.
func Problem(pw, email string) string {
	n := utf8.RuneCountInString(pw)
	switch {
	case n < MinLength:
		return fmt.Sprintf("The password must have at least %d characters.", MinLength)
	case n > MaxLength:
		return fmt.Sprintf("The password must have at most %d characters.", MaxLength)
	case strings.EqualFold(strings.TrimSpace(pw), strings.TrimSpace(email)):
		return "The password must not be the email address."
	case common[strings.ToLower(pw)]:
		return "The password is too common; choose another."
	}
	return ""
}
