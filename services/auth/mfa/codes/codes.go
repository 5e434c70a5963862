// Package codes is the pure part of multi-factor authentication: TOTP
// time steps (RFC 6238 through github.com/pquerna/otp), emailed one-time
// codes and recovery codes, and how each is hashed for storage. It holds
// no state: which step was used last and which codes are spent is the
// store's. docs/auth.md.
package codes

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// The TOTP parameters: the defaults of every authenticator app.
const (
	// Period is the length of a time step.
	Period = 30 * time.Second
	// Skew is how many steps either side of now a code may be from: one
	// covers a clock off by up to 30 s and a code typed as it changes.
	Skew = 1
	// Digits is the length of a TOTP or emailed code.
	Digits = 6
)

// Errors of Step.
var (
	// ErrWrong: the code is none of the accepted steps'.
	ErrWrong = errors.New("wrong code")
	// ErrReplayed: the code is right but its step is not later than the
	// last one accepted, so it was used already (or an older one was).
	ErrReplayed = errors.New("code already used")
)

var opts = totp.ValidateOpts{Period: uint(Period / time.Second), Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

// NewSecret returns a new TOTP secret (base32, 160 bits) and its
// otpauth:// URL for issuer and account (the user's email).
func NewSecret(issuer, account string) (secret, url string, err error) {
	k, err := totp.Generate(totp.GenerateOpts{Issuer: issuer, AccountName: account, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		return "", "", fmt.Errorf("mfa: new totp secret: %w", err)
	}
	return k.Secret(), k.URL(), nil
}

// StepAt is the TOTP time step that contains t.
func StepAt(t time.Time) int64 { return t.Unix() / int64(Period/time.Second) }

// Code returns the TOTP code of secret at t (tests and benchmarks play
// the authenticator app with it).
func Code(secret string, t time.Time) (string, error) {
	return totp.GenerateCodeCustom(secret, t, opts)
}

// Step returns the time step whose code is code, among the steps within
// Skew of now, and refuses it unless it is later than lastStep (the last
// step the user's codes were accepted for; 0 for none): a code works
// once, and no older code works after a newer one did.
func Step(secret, code string, now time.Time, lastStep int64) (int64, error) {
	if !WellFormed(code) {
		return 0, ErrWrong
	}
	cur := StepAt(now)
	for d := int64(-Skew); d <= Skew; d++ {
		step := cur + d
		want, err := totp.GenerateCodeCustom(secret, time.Unix(step*int64(Period/time.Second), 0), opts)
		if err != nil {
			return 0, fmt.Errorf("mfa: totp code: %w", err)
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			if step <= lastStep {
				return 0, ErrReplayed
			}
			return step, nil
		}
	}
	return 0, ErrWrong
}

// WellFormed reports whether code is Digits ASCII digits.
func WellFormed(code string) bool {
	if len(code) != Digits {
		return false
	}
	for i := range len(code) {
		if code[i] < '0' || code[i] > '9' {
			return false
		}
	}
	return true
}

// NewEmailCode returns a random code of Digits digits.
func NewEmailCode() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(1_000_000)) // crypto/rand never fails (Go 1.24+)
	return fmt.Sprintf("%06d", n.Int64())
}

// HashEmailCode is the stored form of a user's emailed code. The user id
// is in the hash, so one user's code hash says nothing about another's.
func HashEmailCode(userID, code string) []byte {
	sum := sha256.Sum256([]byte("email-code\x00" + userID + "\x00" + code))
	return sum[:]
}

// RecoveryCount is how many recovery codes a set holds.
const RecoveryCount = 10

// recoveryAlphabet is lowercase base32 without the look-alikes 0, 1, l, o.
const recoveryAlphabet = "abcdefghijkmnpqrstuvwxyz23456789"

// NewRecoveryCodes returns RecoveryCount codes of the form xxxxx-xxxxx
// (50 random bits each).
func NewRecoveryCodes() []string {
	out := make([]string, RecoveryCount)
	for i := range out {
		var b strings.Builder
		for j := range 10 {
			if j == 5 {
				b.WriteByte('-')
			}
			n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(recoveryAlphabet))))
			b.WriteByte(recoveryAlphabet[n.Int64()])
		}
		out[i] = b.String()
	}
	return out
}

// NormalizeRecovery is a recovery code as typed, in its stored form:
// case, spaces and hyphens do not matter.
func NormalizeRecovery(code string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '-' || r == ' ' || r == '\t':
			return -1
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return r
	}, code)
}

// HashRecovery is the stored form of a recovery code: 50 random bits make
// a plain SHA-256 enough (as for other random tokens).
func HashRecovery(code string) []byte {
	sum := sha256.Sum256([]byte("recovery\x00" + NormalizeRecovery(code)))
	return sum[:]
}
