package webhooks

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
)

// secretPrefix starts every signing secret.
const secretPrefix = "whsec_"

// newSecret returns a signing secret: whsec_ and 32 random bytes in
// URL-safe base64 (43 characters).
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return secretPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// sealer seals secrets at rest with AES-256-GCM. The endpoint id is the
// additional data, so a sealed secret copied to another row does not open.
type sealer struct {
	aead cipher.AEAD
}

// newSealer returns a sealer for a 32-byte key.
func newSealer(key []byte) (*sealer, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("webhook secret key: want 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

// parseKey decodes ALMONER_WEBHOOK_SECRET_KEY: 32 bytes in standard or
// URL-safe base64.
func parseKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil && len(k) == 32 {
			return k, nil
		}
	}
	return nil, errors.New("ALMONER_WEBHOOK_SECRET_KEY: want 32 bytes in base64 (openssl rand -base64 32)")
}

func (s *sealer) seal(secret string, endpointID []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, []byte(secret), endpointID)
}

// errSecretUnavailable means a sealed secret does not open with this
// process's key (the key changed, or a sandbox process made its own).
var errSecretUnavailable = errors.New("signing secret unavailable")

func (s *sealer) open(box, endpointID []byte) (string, error) {
	n := s.aead.NonceSize()
	if len(box) < n {
		return "", errSecretUnavailable
	}
	pt, err := s.aead.Open(nil, box[:n], box[n:], endpointID)
	if err != nil {
		return "", errSecretUnavailable
	}
	return string(pt), nil
}
