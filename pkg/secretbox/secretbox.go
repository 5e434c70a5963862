// Package secretbox seals secrets at rest: webhook signing secrets
// (webhooks service) and payment processor keys (auth service), with one
// AES-256-GCM key per deployment, ALMONER_WEBHOOK_SECRET_KEY.
//
// A sealed box is the 12-byte nonce followed by the GCM ciphertext and tag.
// The caller's associated data (an endpoint id, a tenant id and a field
// name) binds a box to its row, so a box copied to another row or field
// does not open. The format is the one the webhooks service has always
// written, so rows sealed before this package existed still open.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/almoner/almoner/pkg/config"
)

// KeyVar is the variable holding the deployment's sealing key: 32 bytes in
// base64. Its name predates its second use (processor secrets) and stays,
// so existing deployments keep working.
const KeyVar = "ALMONER_WEBHOOK_SECRET_KEY"

// KeySize is the key length in bytes (AES-256).
const KeySize = 32

// ErrUnopenable means a box does not open with this key and associated
// data: the key changed since it was sealed (or a process made its own),
// or the box belongs to another row.
var ErrUnopenable = errors.New("sealed secret does not open with this process's " + KeyVar)

// ErrNoKey is returned by FromConfig when KeyVar is unset.
var ErrNoKey = errors.New(KeyVar + " is not set: it seals webhook signing secrets and payment processor keys at rest, " +
	"and every process of a deployment must use the same one. Set it to 32 random bytes in base64 " +
	"(export " + KeyVar + "=\"$(openssl rand -base64 32)\"; `make run` keeps one in .data/secret-key). " +
	"Only a sandbox process that runs everything (--target=all) may start without one, with a random key that does not survive a restart")

// Sealer seals and opens secrets with one key. It is safe for concurrent use.
type Sealer struct {
	aead cipher.AEAD
}

// New returns a Sealer for a KeySize-byte key.
func New(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("%s: want %d bytes, got %d", KeyVar, KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// FromConfig returns the Sealer for the key in src's KeyVar, ErrNoKey when
// it is unset, or a parse error naming the variable.
func FromConfig(src config.Source) (*Sealer, error) {
	v := src.String(KeyVar, "")
	if v == "" {
		return nil, ErrNoKey
	}
	key, err := ParseKey(v)
	if err != nil {
		return nil, err
	}
	return New(key)
}

// ParseKey decodes a key given as KeySize bytes in standard or URL-safe
// base64, padded or not.
func ParseKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil && len(k) == KeySize {
			return k, nil
		}
	}
	return nil, errors.New(KeyVar + ": want 32 bytes in base64 (openssl rand -base64 32)")
}

// NewKey returns a random key in the form ParseKey reads.
func NewKey() string {
	k := make([]byte, KeySize)
	_, _ = rand.Read(k) // crypto/rand.Read never fails (Go 1.24+)
	return base64.StdEncoding.EncodeToString(k)
}

// Seal returns plaintext sealed under a fresh random nonce, bound to ad.
func (s *Sealer) Seal(plaintext, ad []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, plaintext, ad)
}

// Open returns the plaintext of a box sealed with this key and ad, or
// ErrUnopenable.
func (s *Sealer) Open(box, ad []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(box) < n+s.aead.Overhead() {
		return nil, ErrUnopenable
	}
	pt, err := s.aead.Open(nil, box[:n], box[n:], ad)
	if err != nil {
		return nil, ErrUnopenable
	}
	return pt, nil
}
