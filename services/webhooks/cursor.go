package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/secretbox"
)

// feedCursor is a position in a tenant's feed: the audit cursor and when
// it was issued. Clients see it as an opaque string, signed by cursorKey.
type feedCursor struct {
	at     audit.Cursor
	issued time.Time
}

// feedCursorVersion is the payload's first field. Version 1 was the same
// payload unsigned; its cursors no longer verify.
const feedCursorVersion = "2"

// cursorPurpose is the HKDF info that derives the cursor MAC key from the
// sealing key (ALMONER_WEBHOOK_SECRET_KEY): every replica derives the
// same key, and it is good for nothing else.
const cursorPurpose = "almoner event-feed cursor v2"

// cursorSkew is how far in the future a cursor's issue time may be: the
// clocks of the replicas that issue and read it may differ by that much.
// A signed cursor issued later than that was made by a clock gone wrong,
// and would outlive the retention window by the difference.
const cursorSkew = 5 * time.Minute

// codeInvalidCursor is the typed code of the 400 for a cursor the feed did
// not issue to this tenant, or issued in the future.
const codeInvalidCursor = "Events.InvalidCursor"

var errBadFeedCursor = apperr.FieldRule(codeInvalidCursor, "After",
	"'After' is not a cursor this feed issued to this tenant: pass a nextCursor as it was returned, or read the feed again without 'after'.")

// cursorKey signs and checks feed cursors with HMAC-SHA256.
type cursorKey struct {
	key []byte
}

// newCursorKey derives the cursor key from the sealing key.
func newCursorKey(sealing []byte) (cursorKey, error) {
	k, err := secretbox.DeriveKey(sealing, cursorPurpose, sha256.Size)
	return cursorKey{key: k}, err
}

// mac is the MAC of a payload for a tenant. The tenant is in the MAC and
// not in the payload: a cursor read with another tenant's key fails the
// check, and the cursor does not show whose it is. The NUL keeps the two
// apart (a tenant id has none).
func (k cursorKey) mac(tenantID string, payload []byte) []byte {
	m := hmac.New(sha256.New, k.key)
	m.Write([]byte(tenantID))
	m.Write([]byte{0})
	m.Write(payload)
	return m.Sum(nil)
}

// sign encodes c for tenantID: base64url of the 32-byte MAC followed by
// the payload "2:<xid>:<id>:<issued unix seconds>".
func (k cursorKey) sign(tenantID string, c feedCursor) string {
	payload := []byte(feedCursorVersion + ":" + c.at.String() + ":" + strconv.FormatInt(c.issued.Unix(), 10))
	return base64.RawURLEncoding.EncodeToString(append(k.mac(tenantID, payload), payload...))
}

// parse returns the cursor sign made for tenantID, or errBadFeedCursor:
// for text that is not one, a changed byte, another tenant's cursor, and
// one issued more than cursorSkew after now. The MAC is checked before
// anything in the payload is read.
func (k cursorKey) parse(tenantID, s string, now time.Time) (feedCursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) <= sha256.Size {
		return feedCursor{}, errBadFeedCursor
	}
	sum, payload := raw[:sha256.Size], raw[sha256.Size:]
	if !hmac.Equal(sum, k.mac(tenantID, payload)) {
		return feedCursor{}, errBadFeedCursor
	}
	c, ok := parsePayload(string(payload))
	if !ok || c.issued.After(now.Add(cursorSkew)) {
		return feedCursor{}, errBadFeedCursor
	}
	return c, nil
}

// parsePayload decodes "2:<xid>:<id>:<issued>".
func parsePayload(p string) (feedCursor, bool) {
	parts := strings.Split(p, ":")
	if len(parts) != 4 || parts[0] != feedCursorVersion {
		return feedCursor{}, false
	}
	at, err := audit.ParseCursor(parts[1] + ":" + parts[2])
	if err != nil {
		return feedCursor{}, false
	}
	secs, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil {
		return feedCursor{}, false
	}
	return feedCursor{at: at, issued: time.Unix(secs, 0)}, true
}
