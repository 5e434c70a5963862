package webhooks

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// answerAfter is a transport that answers status once delay has passed,
// whether or not the request's context is done: what net/http's
// Transport does when a response races the request's cancellation.
type answerAfter struct {
	delay  time.Duration
	status int
}

func (a answerAfter) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(a.delay)
	return &http.Response{StatusCode: a.status, Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
}

func TestSendCountsALateAnswerAsATimeout(t *testing.T) {
	const timeout = 50 * time.Millisecond
	cases := []struct {
		name       string
		delay      time.Duration
		status     int
		wantStatus int
		wantErr    string
	}{
		{"in time", 0, http.StatusOK, http.StatusOK, ""},
		{"in time, refused", 0, http.StatusInternalServerError, http.StatusInternalServerError, "HTTP 500"},
		{"late 200", timeout + 30*time.Millisecond, http.StatusOK, 0, "timeout"},
		{"late 500", timeout + 30*time.Millisecond, http.StatusInternalServerError, 0, "timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &sender{client: &http.Client{Transport: answerAfter{tc.delay, tc.status}}, timeout: timeout}
			r := s.send(context.Background(), "https://receiver.example/hook", "whsec_x", "contact.created", []byte(`{}`))
			if r.status != tc.wantStatus || r.err != tc.wantErr || r.success() != (tc.wantErr == "") {
				t.Errorf("send = status %d, err %q, success %v; want status %d, err %q", r.status, r.err, r.success(), tc.wantStatus, tc.wantErr)
			}
		})
	}
}
