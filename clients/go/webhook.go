package almoner

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The request headers of a webhook delivery (docs/webhooks.md).
const (
	HeaderWebhookEvent      = "X-Webhook-Event"
	HeaderWebhookDeliveryID = "X-Webhook-Delivery-Id"
	HeaderWebhookTimestamp  = "X-Webhook-Timestamp"
	HeaderWebhookSignature  = "X-Webhook-Signature"
)

// DefaultWebhookTolerance is how far a delivery's timestamp may be from the
// receiver's clock: older requests are refused as replays.
const DefaultWebhookTolerance = 5 * time.Minute

// Errors VerifyWebhook returns; a receiver answers each with a 4xx.
var (
	ErrWebhookMissingSignature   = errors.New("almoner: webhook signature or timestamp missing")
	ErrWebhookMalformedSignature = errors.New("almoner: webhook signature header is not sha256=<64 hex digits>, or the timestamp is not Unix seconds")
	ErrWebhookSignatureMismatch  = errors.New("almoner: webhook signature does not match the body")
	ErrWebhookStale              = errors.New("almoner: webhook timestamp outside the tolerance")
)

// VerifyWebhook checks a delivery: X-Webhook-Signature must be
// "sha256=" and the hex HMAC-SHA256, keyed by the endpoint's secret, of
// "<X-Webhook-Timestamp>.<raw body>", compared in constant time; and the
// timestamp within tolerance of now (0 skips that check). body is the raw
// request body, read before any JSON decoding.
func VerifyWebhook(secret string, header http.Header, body []byte, tolerance time.Duration) error {
	return verifyWebhookAt(secret, header.Get(HeaderWebhookSignature), header.Get(HeaderWebhookTimestamp), body, tolerance, time.Now())
}

func verifyWebhookAt(secret, signature, timestamp string, body []byte, tolerance time.Duration, now time.Time) error {
	signature, timestamp = strings.TrimSpace(signature), strings.TrimSpace(timestamp)
	if signature == "" || timestamp == "" {
		return ErrWebhookMissingSignature
	}
	hexDigest, ok := strings.CutPrefix(signature, "sha256=")
	got, err := hex.DecodeString(hexDigest)
	if !ok || err != nil || len(got) != sha256.Size {
		return ErrWebhookMalformedSignature
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || ts < 0 {
		return ErrWebhookMalformedSignature
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp + "."))
	m.Write(body)
	// The digest before the clock: a forger learns nothing from which
	// check failed.
	if !hmac.Equal(got, m.Sum(nil)) {
		return ErrWebhookSignatureMismatch
	}
	if tolerance > 0 {
		d := now.Sub(time.Unix(ts, 0))
		if d < 0 {
			d = -d
		}
		if d > tolerance {
			return ErrWebhookStale
		}
	}
	return nil
}
