package secretbox

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/almoner/almoner/pkg/config"
)

func testKey() []byte {
	k := make([]byte, KeySize)
	for i := range k {
		k[i] = byte(i)
	}
	return k
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	s, err := New(testKey())
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("sk_test_51ExampleSecretKeyValue")
	box := s.Seal(secret, []byte("tenant-1/secret_key"))
	if bytes.Contains(box, secret) {
		t.Fatal("sealed box holds the plain secret")
	}
	if again := s.Seal(secret, []byte("tenant-1/secret_key")); bytes.Equal(again, box) {
		t.Error("two seals of one secret are alike: the nonce is not fresh")
	}
	got, err := s.Open(box, []byte("tenant-1/secret_key"))
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v; want %q", got, err, secret)
	}
	for name, ad := range map[string]string{"another row": "tenant-2/secret_key", "another field": "tenant-1/webhook_secret"} {
		if _, err := s.Open(box, []byte(ad)); !errors.Is(err, ErrUnopenable) {
			t.Errorf("box opened for %s: err %v", name, err)
		}
	}
	other, err := New(append([]byte{1}, testKey()[1:]...))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Open(box, []byte("tenant-1/secret_key")); !errors.Is(err, ErrUnopenable) {
		t.Errorf("box opened with another key: err %v", err)
	}
	for _, short := range [][]byte{nil, box[:5], box[:12+15]} {
		if _, err := s.Open(short, []byte("tenant-1/secret_key")); !errors.Is(err, ErrUnopenable) {
			t.Errorf("a %d-byte box: err %v", len(short), err)
		}
	}
	if _, err := New(make([]byte, 16)); err == nil || !strings.Contains(err.Error(), "want 32 bytes") {
		t.Errorf("a 16-byte key: err %v", err)
	}
}

// TestOpensBoxesOfTheWebhooksService opens a box written by the webhooks
// service's own sealer before it moved here (same key, endpoint id as the
// associated data): endpoints registered before the move keep signing.
func TestOpensBoxesOfTheWebhooksService(t *testing.T) {
	t.Parallel()
	box, _ := hex.DecodeString("c89fde932e6d78b5ce3cb14db978ae760065013ce2c2e1f01c36b391824e357194678d981088d4c0a075ad3d0b93bc0bfcdf24ab699874ef0bf8821d537876b563034a5ac83f09f1e4edd79b9c")
	endpointID := []byte{0x01, 0x98, 0x6f, 0x2a, 0x5b, 0x3c, 0x7d, 0x1e, 0x8f, 0x20, 0x31, 0x42, 0x53, 0x64, 0x75, 0x86}
	s, err := New(testKey())
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Open(box, endpointID)
	if want := "whsec_c29tZS1zZWNyZXQtc2lnbmluZy1rZXktZm9yLXRlc3Q"; err != nil || string(got) != want {
		t.Fatalf("Open = %q, %v; want %q", got, err, want)
	}
}

func TestParseKeyAndFromConfig(t *testing.T) {
	t.Parallel()
	key := testKey()
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if got, err := ParseKey(enc.EncodeToString(key)); err != nil || !bytes.Equal(got, key) {
			t.Errorf("ParseKey(%s) = %x, %v", enc.EncodeToString(key), got, err)
		}
	}
	for _, bad := range []string{"short", base64.StdEncoding.EncodeToString(key[:31]), base64.StdEncoding.EncodeToString(append(key, 0)), "not base64!!"} {
		if _, err := ParseKey(bad); err == nil || !strings.Contains(err.Error(), KeyVar) {
			t.Errorf("ParseKey(%q): err %v, want one naming %s", bad, err, KeyVar)
		}
	}
	fresh := NewKey()
	if k, err := ParseKey(fresh); err != nil || len(k) != KeySize {
		t.Fatalf("NewKey %q does not parse: %v", fresh, err)
	}
	if NewKey() == fresh {
		t.Error("two new keys alike")
	}

	if _, err := FromConfig(config.Overlay(map[string]string{}, nil)); !errors.Is(err, ErrNoKey) {
		t.Errorf("no key: err %v, want ErrNoKey", err)
	}
	if !strings.Contains(ErrNoKey.Error(), "openssl rand -base64 32") || !strings.Contains(ErrNoKey.Error(), "--target=all") {
		t.Errorf("ErrNoKey does not say how to set a key: %v", ErrNoKey)
	}
	if _, err := FromConfig(config.Overlay(map[string]string{KeyVar: "short"}, nil)); err == nil || errors.Is(err, ErrNoKey) {
		t.Errorf("bad key: err %v", err)
	}
	a, err := FromConfig(config.Overlay(map[string]string{KeyVar: fresh}, nil))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := FromConfig(config.Overlay(map[string]string{KeyVar: fresh}, nil))
	if got, err := b.Open(a.Seal([]byte("x"), nil), nil); err != nil || string(got) != "x" {
		t.Errorf("two sealers of one configured key disagree: %q, %v", got, err)
	}
}
