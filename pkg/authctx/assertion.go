package authctx

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/almoner/almoner/pkg/config"
)

// KeyVar is the variable holding the deployment's internal key, which
// signs and verifies every call between Almoner's processes: at least
// MinKeySize random bytes in hex.
const KeyVar = "ALMONER_INTERNAL_KEY"

// MinKeySize is the shortest internal key, in bytes: HMAC-SHA256 gains
// nothing from more than its 32-byte output, and must not have less.
const MinKeySize = 32

// MetadataKey is the gRPC metadata key of the signed assertion. It is
// binary (-bin): gRPC carries it base64-encoded and hands over the bytes.
const MetadataKey = "x-almoner-assertion-bin"

// Lifetime is how long an assertion is accepted after it was signed. Each
// process signs its own calls afresh, so it only has to cover the call's
// way to the server and the clocks' difference; a copied assertion is of
// no use beyond it, and never for another method.
const Lifetime = 30 * time.Second

// ErrNoKey is returned by KeyFromConfig when KeyVar is unset.
var ErrNoKey = errors.New(KeyVar + " is not set: it signs the calls between Almoner's processes (the principal the gateway " +
	"asserts, and the services' own calls), and every process of a deployment must use the same one. Set it to at least 32 " +
	"random bytes in hex (export " + KeyVar + "=\"$(openssl rand -hex 32)\"; `make run` keeps one in .data/internal-key). " +
	"Only a sandbox process that runs everything (--target=all) may start without one, with a random key that no other process knows")

// Why an assertion was refused. Every one is the same Unauthenticated to
// the caller; the server's log names the reason.
var (
	errMissing   = errors.New("no assertion")
	errMalformed = errors.New("malformed assertion")
	errForged    = errors.New("signature does not verify (another " + KeyVar + ", or forged)")
	errExpired   = errors.New("assertion expired (stale, or the clocks differ by more than its lifetime)")
	errMethod    = errors.New("assertion signed for another method")
)

// version starts every assertion's payload, so that a later format is
// told apart instead of misread.
const version = "v3"

// Key signs and verifies assertions with one deployment's internal key. It
// is safe for concurrent use.
type Key struct {
	macs sync.Pool // of HMAC-SHA256 states keyed with the secret
	now  func() time.Time
}

// NewKey returns the Key for a secret of at least MinKeySize bytes.
func NewKey(secret []byte) (*Key, error) {
	if len(secret) < MinKeySize {
		return nil, fmt.Errorf("%s: want at least %d random bytes, got %d", KeyVar, MinKeySize, len(secret))
	}
	s := append([]byte(nil), secret...)
	k := &Key{now: time.Now}
	// hmac.New hashes the key and allocates two SHA-256 states: done once
	// per pooled state instead of on every call.
	k.macs.New = func() any { return hmac.New(sha256.New, s) }
	return k, nil
}

// ParseKey reads a key written in hex (openssl rand -hex 32), with or
// without surrounding white space (a key file's newline).
func ParseKey(s string) (*Key, error) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, errors.New(KeyVar + ": not hex; want at least 32 random bytes in hex (openssl rand -hex 32)")
	}
	if len(b) < MinKeySize {
		return nil, fmt.Errorf("%s: %d bytes; want at least 32 random bytes in hex (openssl rand -hex 32)", KeyVar, len(b))
	}
	return NewKey(b)
}

// KeyFromConfig returns the Key in src's KeyVar, ErrNoKey when it is unset,
// or a parse error naming the variable.
func KeyFromConfig(src config.Source) (*Key, error) {
	v := src.String(KeyVar, "")
	if v == "" {
		return nil, ErrNoKey
	}
	return ParseKey(v)
}

// NewKeyHex returns a random key of MinKeySize bytes in the form ParseKey
// reads.
func NewKeyHex() string {
	b := make([]byte, MinKeySize)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// Sign returns the assertion that p makes a call of method (its full gRPC
// name), good until expires: the payload, then its HMAC-SHA256. A zero p is
// a service assertion: the call comes from Almoner's own processes, for no
// tenant.
//
// The payload is its fields one per line: version, expiry (Unix
// milliseconds), method, tenant, key id, key prefix, currency, user id,
// session id, impersonator, impersonation, scopes and features
// (comma-separated). A field holding a line break, or a list item
// holding a comma, would change the fields' meaning, so it is refused.
func (k *Key) Sign(p Principal, method string, expires time.Time) (string, error) {
	for _, f := range []string{method, p.TenantID, p.KeyID, p.KeyPrefix, p.Currency, p.UserID, p.SessionID, p.Impersonator, p.Impersonation} {
		if strings.ContainsRune(f, '\n') {
			return "", errors.New("authctx: a line break in an assertion field")
		}
	}
	for _, l := range [][]string{p.Scopes, p.Features} {
		for _, item := range l {
			if item == "" || strings.ContainsAny(item, ",\n") {
				return "", fmt.Errorf("authctx: list item %q cannot be asserted", item)
			}
		}
	}
	n := 50 + len(method) + len(p.TenantID) + len(p.KeyID) + len(p.KeyPrefix) + len(p.Currency) + len(p.UserID) + len(p.SessionID) +
		len(p.Impersonator) + len(p.Impersonation) + sha256.Size
	for _, l := range [][]string{p.Scopes, p.Features} {
		for _, item := range l {
			n += len(item) + 1
		}
	}
	b := make([]byte, 0, n)
	b = append(b, version...)
	b = append(b, '\n')
	b = strconv.AppendInt(b, expires.UnixMilli(), 10)
	for _, f := range []string{method, p.TenantID, p.KeyID, p.KeyPrefix, p.Currency, p.UserID, p.SessionID, p.Impersonator, p.Impersonation} {
		b = append(b, '\n')
		b = append(b, f...)
	}
	for _, l := range [][]string{p.Scopes, p.Features} {
		b = append(b, '\n')
		for i, item := range l {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, item...)
		}
	}
	return string(k.appendMAC(b, b)), nil
}

// appendMAC appends the HMAC of payload to dst.
func (k *Key) appendMAC(dst, payload []byte) []byte {
	h := k.macs.Get().(hash.Hash)
	h.Reset()
	h.Write(payload)
	dst = h.Sum(dst)
	k.macs.Put(h)
	return dst
}

// Verify checks an assertion for a call of method at now and returns what
// it asserts: a Principal, zero for a service assertion. It fails unless
// the signature is this key's, the assertion has not expired and it was
// signed for method.
func (k *Key) Verify(assertion, method string, now time.Time) (Principal, error) {
	if len(assertion) <= sha256.Size {
		return Principal{}, errMalformed
	}
	// The fields are read from the string (substrings, no copies); the
	// MAC needs bytes, copied once.
	raw := []byte(assertion)
	n := len(raw) - sha256.Size
	var sum [sha256.Size]byte
	if !hmac.Equal(k.appendMAC(sum[:0], raw[:n]), raw[n:]) {
		return Principal{}, errForged
	}
	payload := assertion[:n]
	var f [13]string
	rest := payload
	for i := range f {
		var ok bool
		if f[i], rest, ok = strings.Cut(rest, "\n"); !ok && i < len(f)-1 {
			return Principal{}, errMalformed
		}
	}
	if f[0] != version || rest != "" {
		return Principal{}, errMalformed
	}
	exp, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return Principal{}, errMalformed
	}
	if now.UnixMilli() >= exp {
		return Principal{}, errExpired
	}
	if f[2] != method {
		return Principal{}, errMethod
	}
	return Principal{TenantID: f[3], tenantUUID: parseTenant(f[3]), KeyID: f[4], KeyPrefix: f[5], Currency: f[6], UserID: f[7], SessionID: f[8],
		Impersonator: f[9], Impersonation: f[10], Scopes: splitList(f[11]), Features: splitList(f[12])}, nil
}
