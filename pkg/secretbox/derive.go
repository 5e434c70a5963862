package secretbox

import (
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
)

// DeriveKey returns a size-byte key for one purpose, derived from the
// deployment's sealing key with HKDF-SHA256 (RFC 5869; the purpose is its
// info). Every process holding the sealing key derives the same key, so a
// new use of a server secret (the event feed's cursor MAC) needs no new
// operator setting, and a key derived for one purpose reveals nothing of
// the sealing key or of a key derived for another.
func DeriveKey(master []byte, purpose string, size int) ([]byte, error) {
	if len(master) != KeySize {
		return nil, fmt.Errorf("%s: want %d bytes, got %d", KeyVar, KeySize, len(master))
	}
	k, err := hkdf.Key(sha256.New, master, nil, purpose, size)
	if err != nil {
		return nil, fmt.Errorf("derive the %q key: %w", purpose, err)
	}
	return k, nil
}
