package authctx

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"maps"
	"slices"
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

	// signed holds this process's assertions for reuse (assert), by the
	// principal and method they assert (signedKey).
	signedMu sync.RWMutex
	signed   map[signedKey]signed
	// verified holds the assertions whose signature checked (Verify), by
	// their bytes.
	verifiedMu sync.RWMutex
	verified   map[string]verified
}

// NewKey returns the Key for a secret of at least MinKeySize bytes.
func NewKey(secret []byte) (*Key, error) {
	if len(secret) < MinKeySize {
		return nil, fmt.Errorf("%s: want at least %d random bytes, got %d", KeyVar, MinKeySize, len(secret))
	}
	s := append([]byte(nil), secret...)
	k := &Key{now: time.Now, signed: map[signedKey]signed{}, verified: map[string]verified{}}
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
	buf := fieldBufs.Get().(*[]byte)
	defer fieldBufs.Put(buf)
	fields, err := appendFields((*buf)[:0], p, method)
	*buf = fields
	if err != nil {
		return "", err
	}
	return k.signFields(fields, expires), nil
}

// appendFields appends what an assertion of p for method says after its
// expiry, from the method to the features, to b; or refuses a field that
// would shift the others.
func appendFields(b []byte, p Principal, method string) ([]byte, error) {
	for _, f := range []string{method, p.TenantID, p.KeyID, p.KeyPrefix, p.Currency, p.UserID, p.SessionID, p.Impersonator, p.Impersonation} {
		if strings.ContainsRune(f, '\n') {
			return nil, errors.New("authctx: a line break in an assertion field")
		}
	}
	for _, l := range [][]string{p.Scopes, p.Features} {
		for _, item := range l {
			if item == "" || strings.ContainsAny(item, ",\n") {
				return nil, fmt.Errorf("authctx: list item %q cannot be asserted", item)
			}
		}
	}
	b = append(b, method...)
	for _, f := range []string{p.TenantID, p.KeyID, p.KeyPrefix, p.Currency, p.UserID, p.SessionID, p.Impersonator, p.Impersonation} {
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
	return b, nil
}

// signFields returns the assertion of fields (appendFields) good until
// expires: version, expiry, fields, then the MAC of all three.
func (k *Key) signFields(fields []byte, expires time.Time) string {
	b := make([]byte, 0, len(version)+22+len(fields)+sha256.Size)
	b = append(b, version...)
	b = append(b, '\n')
	b = strconv.AppendInt(b, expires.UnixMilli(), 10)
	b = append(b, '\n')
	b = append(b, fields...)
	return string(k.appendMAC(b, b))
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
//
// An assertion whose signature and form were checked once is kept (by its
// exact bytes) until it expires, so that the same bytes presented again
// (Reuse) are not MACed and split again: their expiry and method are
// still checked on every call.
func (k *Key) Verify(assertion, method string, now time.Time) (Principal, error) {
	k.verifiedMu.RLock()
	v, ok := k.verified[assertion]
	k.verifiedMu.RUnlock()
	if !ok {
		var err error
		if v, err = k.verifyMAC(assertion); err != nil {
			return Principal{}, err
		}
		k.rememberVerified(assertion, v, now)
	}
	if now.UnixMilli() >= v.expires {
		return Principal{}, errExpired
	}
	if v.method != method {
		return Principal{}, errMethod
	}
	return v.p, nil
}

// verified is what an assertion with a good signature says.
type verified struct {
	p       Principal
	method  string
	expires int64 // Unix milliseconds
}

// verifyMAC checks an assertion's signature and form and reads it; its
// expiry and method are Verify's to check.
func (k *Key) verifyMAC(assertion string) (verified, error) {
	if len(assertion) <= sha256.Size {
		return verified{}, errMalformed
	}
	// The fields are read from the string (substrings, no copies); the
	// MAC needs bytes, copied once.
	raw := []byte(assertion)
	n := len(raw) - sha256.Size
	var sum [sha256.Size]byte
	if !hmac.Equal(k.appendMAC(sum[:0], raw[:n]), raw[n:]) {
		return verified{}, errForged
	}
	payload := assertion[:n]
	var f [13]string
	rest := payload
	for i := range f {
		var ok bool
		if f[i], rest, ok = strings.Cut(rest, "\n"); !ok && i < len(f)-1 {
			return verified{}, errMalformed
		}
	}
	if f[0] != version || rest != "" {
		return verified{}, errMalformed
	}
	exp, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return verified{}, errMalformed
	}
	// The lists are clipped: a caller that appends to a shared principal's
	// scopes gets a copy.
	return verified{method: f[2], expires: exp, p: Principal{TenantID: f[3], tenantUUID: parseTenant(f[3]), KeyID: f[4], KeyPrefix: f[5],
		Currency: f[6], UserID: f[7], SessionID: f[8], Impersonator: f[9], Impersonation: f[10],
		Scopes: slices.Clip(splitList(f[11])), Features: slices.Clip(splitList(f[12]))}}, nil
}

// maxVerified bounds the assertions a Key keeps verified: a few thousand
// principals and methods in use within a Lifetime, ≈ 600 bytes each.
const maxVerified = 4096

// rememberVerified keeps v, read from assertion, until it expires. When
// the cache is full it drops what expired, and everything if that is not
// enough: a dropped assertion is only verified again.
func (k *Key) rememberVerified(assertion string, v verified, now time.Time) {
	ms := now.UnixMilli()
	if ms >= v.expires {
		return
	}
	k.verifiedMu.Lock()
	defer k.verifiedMu.Unlock()
	if len(k.verified) >= maxVerified {
		maps.DeleteFunc(k.verified, func(_ string, e verified) bool { return ms >= e.expires })
		if len(k.verified) >= maxVerified {
			clear(k.verified)
		}
	}
	k.verified[assertion] = v
}

// Reuse is how long a process goes on sending an assertion it signed for
// one principal and method, instead of signing each call afresh: at most
// Reuse of its Lifetime is gone when a call carries it, so it still has
// Lifetime - Reuse (29 s) to cover the wire and the clocks' difference.
// What it asserts is what a fresh one would (the same principal, method
// and key), and it expires Lifetime after it was signed, as every
// assertion does. Identical bytes call after call also let HTTP/2's
// header compression send an index instead of ≈ 650 bytes, and the
// receiver skip the MAC (Verify).
const Reuse = time.Second

// maxSigned bounds the assertions a Key keeps for reuse.
const maxSigned = 1024

// signedKey finds an assertion kept for reuse without building and
// hashing its ≈ 600 bytes of fields: the method and the principal's
// strings by value, its two lists by identity (where their elements are,
// and how many). Identity only picks the entry; the entry's own copy of
// the lists is compared with the call's before it is reused (signed.same).
type signedKey struct {
	method, tenantID, keyID, keyPrefix, currency, userID, sessionID, impersonator, impersonation string
	scopes, features                                                                             listID
}

// listID is a list's identity: its first element's address and its length.
type listID struct {
	first *string
	n     int
}

func keyOf(p Principal, method string) signedKey {
	return signedKey{method: method, tenantID: p.TenantID, keyID: p.KeyID, keyPrefix: p.KeyPrefix, currency: p.Currency,
		userID: p.UserID, sessionID: p.SessionID, impersonator: p.Impersonator, impersonation: p.Impersonation,
		scopes: idOf(p.Scopes), features: idOf(p.Features)}
}

func idOf(l []string) listID {
	if len(l) == 0 {
		return listID{}
	}
	return listID{&l[0], len(l)}
}

// signed is an assertion kept for reuse, when it was signed, and copies
// of the lists it asserts.
type signed struct {
	assertion        string
	at               time.Time
	scopes, features []string
}

// same reports whether s asserts p's lists: the key matched the rest. A
// list changed in place since (an element replaced) no longer matches
// its copy. The elements still share their bytes with the copy's, so the
// comparison is of lengths and addresses, not of the scopes' text.
func (s signed) same(p Principal) bool {
	return slices.Equal(s.scopes, p.Scopes) && slices.Equal(s.features, p.Features)
}

// fieldBufs are appendFields' buffers: what Sign and assert build before
// they sign.
var fieldBufs = sync.Pool{New: func() any { return new([]byte) }}

// assert returns an assertion of p for method: the one signed for them
// less than Reuse ago, else a new one good for Lifetime.
func (k *Key) assert(p Principal, method string) (string, error) {
	key := keyOf(p, method)
	now := k.now()
	k.signedMu.RLock()
	s, ok := k.signed[key]
	k.signedMu.RUnlock()
	if ok && fresh(s.at, now) && s.same(p) {
		return s.assertion, nil
	}
	buf := fieldBufs.Get().(*[]byte)
	defer fieldBufs.Put(buf)
	fields, err := appendFields((*buf)[:0], p, method)
	*buf = fields
	if err != nil {
		return "", err
	}
	a := k.signFields(fields, now.Add(Lifetime))
	k.signedMu.Lock()
	defer k.signedMu.Unlock()
	if len(k.signed) >= maxSigned {
		maps.DeleteFunc(k.signed, func(_ signedKey, s signed) bool { return !fresh(s.at, now) })
		if len(k.signed) >= maxSigned {
			clear(k.signed)
		}
	}
	k.signed[key] = signed{assertion: a, at: now, scopes: slices.Clone(p.Scopes), features: slices.Clone(p.Features)}
	return a, nil
}

// fresh reports whether an assertion signed at may still be sent at now:
// less than Reuse later, and not before (a clock set back).
func fresh(at, now time.Time) bool {
	d := now.Sub(at)
	return d >= 0 && d < Reuse
}
