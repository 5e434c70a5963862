// Package webhook signs Almoner's outbound webhook requests and verifies
// them, for the dispatcher and for receivers written in Go.
//
// The signed message is "<timestamp>.<raw body>"; the signature is
// HMAC-SHA256 keyed by the endpoint's secret (its UTF-8 bytes), written as
// lowercase hexadecimal and sent as "sha256=<hex>" in X-Webhook-Signature.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// The request headers of a delivery.
const (
	HeaderEvent      = "X-Webhook-Event"
	HeaderDeliveryID = "X-Webhook-Delivery-Id"
	HeaderTimestamp  = "X-Webhook-Timestamp"
	HeaderSignature  = "X-Webhook-Signature"
)

// SignaturePrefix starts every signature header value.
const SignaturePrefix = "sha256="

// Errors Verify returns; receivers answer all of them with a 4xx.
var (
	// ErrMissingSignature means the signature or timestamp header is empty.
	ErrMissingSignature = errors.New("webhook: missing signature")
	// ErrMalformedSignature means the header is not "sha256=<64 hex digits>"
	// or the timestamp is not Unix seconds.
	ErrMalformedSignature = errors.New("webhook: malformed signature header")
	// ErrMismatch means the signature does not match the body.
	ErrMismatch = errors.New("webhook: signature mismatch")
	// ErrStale means the timestamp is further from now than the tolerance.
	ErrStale = errors.New("webhook: timestamp outside tolerance")
)

// Sign returns the X-Webhook-Signature value for body sent at timestamp
// (Unix seconds).
func Sign(secret string, timestamp int64, body []byte) string {
	return SignaturePrefix + hex.EncodeToString(mac(secret, strconv.FormatInt(timestamp, 10), body))
}

func mac(secret, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// ParseSignature decodes a "sha256=<hex>" header value into the digest.
// Upper-case hex is accepted (the sender writes lower case); anything else
// around it is not.
func ParseSignature(header string) ([]byte, error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return nil, ErrMissingSignature
	}
	hexDigest, ok := strings.CutPrefix(header, SignaturePrefix)
	if !ok || len(hexDigest) != 2*sha256.Size {
		return nil, ErrMalformedSignature
	}
	d, err := hex.DecodeString(hexDigest)
	if err != nil {
		return nil, ErrMalformedSignature
	}
	return d, nil
}

// Verify checks the headers of a received delivery against the raw body:
// header is X-Webhook-Signature, timestamp X-Webhook-Timestamp. The digest
// is compared in constant time. A tolerance > 0 also rejects a timestamp
// more than tolerance away from the receiver's clock (replays of old
// requests); 0 skips that check.
func Verify(secret, header, timestamp string, body []byte, tolerance time.Duration) error {
	return verifyAt(secret, header, timestamp, body, tolerance, time.Now())
}

func verifyAt(secret, header, timestamp string, body []byte, tolerance time.Duration, now time.Time) error {
	if strings.TrimSpace(timestamp) == "" {
		return ErrMissingSignature
	}
	got, err := ParseSignature(header)
	if err != nil {
		return err
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || ts < 0 {
		return ErrMalformedSignature
	}
	// The digest is checked before the clock so that a forged request
	// learns nothing from which of the two failed.
	if !hmac.Equal(got, mac(secret, timestamp, body)) {
		return ErrMismatch
	}
	if tolerance > 0 {
		d := now.Sub(time.Unix(ts, 0))
		if d < 0 {
			d = -d
		}
		if d > tolerance {
			return ErrStale
		}
	}
	return nil
}
