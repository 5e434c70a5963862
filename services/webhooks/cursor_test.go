package webhooks

import (
	"bytes"
	"context"
	"encoding/base64"
	"strconv"
	"testing"
	"time"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/audit"
)

// TestFeedCursorSigned: a cursor reads back only as it was issued, for the
// tenant it was issued to, and not from the future; forged, edited,
// another tenant's or another deployment's cursors are 400
// Events.InvalidCursor under After; one issued before retention is 410.
func TestFeedCursorSigned(t *testing.T) {
	t.Parallel()
	const tenant, other = "0193a000-0000-7000-8000-000000000001", "0193a000-0000-7000-8000-000000000002"
	now := time.Unix(1_790_000_000, 0)
	k := mustCursorKey(t, 7)
	a := &eventServer{s: &Service{cfg: Config{EventRetention: MinEventRetention}, cursors: k}}
	issued := feedCursor{at: audit.Cursor{XID: 9001, ID: 42}, issued: now.Add(-time.Hour)}
	good := k.sign(tenant, issued)

	got, err := a.feedStart(context.Background(), tenant, good, now)
	if err != nil || got != issued.at {
		t.Fatalf("own cursor = %v, %v; want %v", got, err, issued.at)
	}
	unsigned := func(p string) string { return base64.RawURLEncoding.EncodeToString([]byte(p)) }
	nowText := strconv.FormatInt(now.Unix(), 10)
	cases := []struct {
		name, cursor string
		code         string
		kind         apperr.Kind
	}{
		{"forged v1 1:0:0:now", unsigned("1:0:0:" + nowText), codeInvalidCursor, apperr.KindInvalid},
		{"forged v2 without a MAC", unsigned("2:0:0:" + nowText), codeInvalidCursor, apperr.KindInvalid},
		{"forged v2 with a zero MAC", base64.RawURLEncoding.EncodeToString(append(make([]byte, 32), "2:0:0:"+nowText...)), codeInvalidCursor, apperr.KindInvalid},
		{"another tenant's", k.sign(other, issued), codeInvalidCursor, apperr.KindInvalid},
		{"another deployment's key", mustCursorKey(t, 8).sign(tenant, issued), codeInvalidCursor, apperr.KindInvalid},
		{"payload edited, MAC kept", resign(t, good, "2:9001:42:"+strconv.FormatInt(now.Add(31*365*24*time.Hour).Unix(), 10)), codeInvalidCursor, apperr.KindInvalid},
		{"issued beyond the skew", k.sign(tenant, feedCursor{at: issued.at, issued: now.Add(cursorSkew + time.Second)}), codeInvalidCursor, apperr.KindInvalid},
		{"issued 31 years ahead", k.sign(tenant, feedCursor{at: issued.at, issued: now.AddDate(31, 0, 0)}), codeInvalidCursor, apperr.KindInvalid},
		{"not base64", "not a cursor!", codeInvalidCursor, apperr.KindInvalid},
		{"only a MAC", base64.RawURLEncoding.EncodeToString(k.mac(tenant, nil)), codeInvalidCursor, apperr.KindInvalid},
		{"expired", k.sign(tenant, feedCursor{at: issued.at, issued: now.Add(-MinEventRetention - time.Second)}), codeCursorExpired, apperr.KindGone},
	}
	for _, c := range cases {
		_, err := a.feedStart(context.Background(), tenant, c.cursor, now)
		e, ok := apperr.As(err)
		if !ok || e.Code != c.code || e.Kind != c.kind {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
			continue
		}
		if c.kind == apperr.KindInvalid && (len(e.Violations) != 1 || e.Violations[0].Field != "After") {
			t.Errorf("%s: violations %v, want one under After", c.name, e.Violations)
		}
	}
	// Every single changed byte is refused.
	raw, _ := base64.RawURLEncoding.DecodeString(good)
	for i := range raw {
		b := bytes.Clone(raw)
		b[i] ^= 0x01
		if _, err := a.feedStart(context.Background(), tenant, base64.RawURLEncoding.EncodeToString(b), now); !apperr.IsKind(err, apperr.KindInvalid) {
			t.Errorf("byte %d changed: %v", i, err)
		}
	}
	// Within the skew, and 29 days old: still read.
	for _, at := range []time.Time{now.Add(cursorSkew), now.Add(-29 * 24 * time.Hour)} {
		if _, err := a.feedStart(context.Background(), tenant, k.sign(tenant, feedCursor{at: issued.at, issued: at}), now); err != nil {
			t.Errorf("issued %s: %v", at, err)
		}
	}
}

// mustCursorKey is the cursor key of a sealing key of 32 bytes b.
func mustCursorKey(t *testing.T, b byte) cursorKey {
	t.Helper()
	k, err := newCursorKey(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// resign keeps cursor's MAC and replaces its payload.
func resign(t *testing.T, cursor, payload string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(append(raw[:32:32], payload...))
}
