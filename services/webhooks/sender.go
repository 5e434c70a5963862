package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/webhook"
)

// sender makes the HTTPS POSTs.
type sender struct {
	client  *http.Client
	timeout time.Duration
}

func newSender(policy urlPolicy, timeout time.Duration, roots *x509.CertPool, conns int) *sender {
	dialer := &net.Dialer{Timeout: timeout, Control: policy.control}
	tr := &http.Transport{
		// Never a proxy: it would dial the receiver for us, past the
		// address check of Control.
		Proxy:                 nil,
		DialContext:           policy.dialContext(dialer),
		TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          conns * 2,
		MaxIdleConnsPerHost:   conns,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &sender{
		timeout: timeout,
		client: &http.Client{
			Transport: tr,
			// A redirect is never followed: the 3xx is the answer, and a
			// failure. Following it would let a receiver point the
			// dispatcher anywhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// result is what one POST did.
type result struct {
	deliveryID uuid.UUID
	started    time.Time
	duration   time.Duration
	status     int
	err        string
}

func (r result) success() bool { return r.err == "" && r.status >= 200 && r.status < 300 }

// send POSTs body, signed with secret, as one attempt. The receiver's
// response body is read (a little, to reuse the connection) and dropped:
// it is never stored or returned.
func (s *sender) send(ctx context.Context, url, secret, event string, body []byte) result {
	id, _ := uuid.NewV7()
	r := result{deliveryID: id, started: time.Now()}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		r.err = "invalid endpoint URL"
		return r
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Almoner-Webhooks/1")
	req.Header.Set(webhook.HeaderEvent, event)
	req.Header.Set(webhook.HeaderDeliveryID, id.String())
	req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(webhook.HeaderSignature, webhook.Sign(secret, ts, body))
	// ctx carries the attempt's span, but the client has no tracing
	// transport, so no traceparent is sent: the receiver is outside, and
	// trace and span ids are internal.
	resp, err := s.client.Do(req)
	if err != nil {
		r.duration = time.Since(r.started)
		r.err = sanitize(err)
		return r
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	r.duration = time.Since(r.started)
	if late(ctx) {
		r.err = "timeout"
		return r
	}
	r.status = resp.StatusCode
	if !r.success() {
		r.err = "HTTP " + strconv.Itoa(resp.StatusCode)
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			r.err += " (redirects are not followed)"
		}
	}
	return r
}

// late reports that an attempt's answer came after its deadline. The
// transport hands back a response that races its own cancellation (the
// receiver may answer the moment it sees the connection close), so a
// response does not prove the receiver answered in time. The timeout is
// the contract: a late answer is a timeout, whatever its status.
func late(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// sanitize turns a transport error into a short reason that carries no
// internal detail (addresses, resolver output, receiver text).
func sanitize(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	switch {
	case errors.Is(err, errAddrNotAllowed):
		return "connection refused: the address is internal and not allowed"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case errors.As(err, &dnsErr):
		return "host name could not be resolved"
	case errors.As(err, &certErr), errors.As(err, &recErr), strings.Contains(err.Error(), "tls:"), strings.Contains(err.Error(), "x509:"):
		return "TLS handshake failed"
	case strings.Contains(err.Error(), "connection refused"):
		return "connection refused"
	case strings.Contains(err.Error(), "connection reset"), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the receiver"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	default:
		return "network error"
	}
}
