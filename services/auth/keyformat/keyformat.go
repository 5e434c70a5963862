// Package keyformat makes and parses Almoner API keys.
//
// A key reads ak_<env>_<lookup>_<secret><check>:
//   - ak_live_ (production) or ak_test_ (sandbox);
//   - lookup: 12 base62 characters, public, finds the key's row;
//   - secret: 43 base62 characters, 256 bits from crypto/rand;
//   - check: 6 base62 characters of the CRC-32 of everything before it, so
//     secret scanners can recognise a leaked key and the service can refuse
//     a mistyped or invented one without touching the database.
//
// The key prefix shown to users is ak_<env>_<lookup>.
package keyformat

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"hash/crc32"
	"strings"
)

// Environment names.
const (
	Sandbox    = "sandbox"
	Production = "production"
)

const (
	alphabet  = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	lookupLen = 12
	secretLen = 43
	checkLen  = 6
)

// envPrefix maps an environment to its key prefix.
var envPrefix = map[string]string{Production: "ak_live_", Sandbox: "ak_test_"}

// ErrMalformed is returned for anything that is not a well-formed key.
var ErrMalformed = errors.New("malformed API key")

// Key is a parsed key.
type Key struct {
	Environment string
	LookupID    string
	// Prefix is the public start of the key: ak_<env>_<lookup>.
	Prefix string
	// Plain is the whole key as presented.
	Plain string
}

// Hash is the SHA-256 of the whole key, the only form that is stored.
func (k Key) Hash() []byte {
	h := sha256.Sum256([]byte(k.Plain))
	return h[:]
}

// New makes a fresh key for env.
func New(env string) (Key, error) {
	p, ok := envPrefix[env]
	if !ok {
		return Key{}, errors.New("unknown environment " + env)
	}
	lookup, err := randomString(lookupLen)
	if err != nil {
		return Key{}, err
	}
	secret, err := randomString(secretLen)
	if err != nil {
		return Key{}, err
	}
	body := p + lookup + "_" + secret
	plain := body + checksum(body)
	return Key{Environment: env, LookupID: lookup, Prefix: p + lookup, Plain: plain}, nil
}

// Parse checks the form and the checksum of s. It does no I/O.
func Parse(s string) (Key, error) {
	var env, rest string
	switch {
	case strings.HasPrefix(s, envPrefix[Production]):
		env, rest = Production, s[len(envPrefix[Production]):]
	case strings.HasPrefix(s, envPrefix[Sandbox]):
		env, rest = Sandbox, s[len(envPrefix[Sandbox]):]
	default:
		return Key{}, ErrMalformed
	}
	if len(rest) != lookupLen+1+secretLen+checkLen || rest[lookupLen] != '_' {
		return Key{}, ErrMalformed
	}
	lookup := rest[:lookupLen]
	secret := rest[lookupLen+1 : lookupLen+1+secretLen]
	if !isBase62(lookup) || !isBase62(secret) {
		return Key{}, ErrMalformed
	}
	body := s[:len(s)-checkLen]
	if checksum(body) != s[len(s)-checkLen:] {
		return Key{}, ErrMalformed
	}
	p := envPrefix[env]
	return Key{Environment: env, LookupID: lookup, Prefix: p + lookup, Plain: s}, nil
}

func checksum(body string) string {
	n := crc32.ChecksumIEEE([]byte(body))
	var out [checkLen]byte
	for i := checkLen - 1; i >= 0; i-- {
		out[i] = alphabet[n%62]
		n /= 62
	}
	return string(out[:])
}

func isBase62(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// randomString returns n characters drawn uniformly from the alphabet,
// rejecting bytes ≥ 248 so no character is more likely than another.
func randomString(n int) (string, error) {
	out := make([]byte, 0, n)
	buf := make([]byte, n+16)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			return "", err
		}
		for _, b := range buf {
			if b < 248 && len(out) < n {
				out = append(out, alphabet[b%62])
			}
		}
	}
	return string(out), nil
}
