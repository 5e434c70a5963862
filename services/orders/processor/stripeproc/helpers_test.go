package stripeproc_test

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/almoner/almoner/services/orders/processor"
	"github.com/almoner/almoner/services/orders/processor/stripeproc"
)

// sent is one request as it left the adapter.
type sent struct {
	Method string
	URL    *url.URL
	Header http.Header
	Form   url.Values
}

// recorder is a RoundTripper that keeps every request before passing it
// on, so a test sees what the adapter sent as well as what came back.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	reqs []sent
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, err
	}
	if req.URL.RawQuery != "" {
		q, err := url.ParseQuery(req.URL.RawQuery)
		if err != nil {
			return nil, err
		}
		for k, v := range q {
			form[k] = append(form[k], v...)
		}
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, sent{Method: req.Method, URL: req.URL, Header: req.Header.Clone(), Form: form})
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

func (r *recorder) all() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sent(nil), r.reqs...)
}

// last returns the last request; the test fails when there was none.
func (r *recorder) last(t *testing.T) sent {
	t.Helper()
	all := r.all()
	if len(all) == 0 {
		t.Fatal("no request was sent")
	}
	return all[len(all)-1]
}

// newRecorded returns an adapter for base whose requests are recorded.
func newRecorded(base, key string) (processor.Processor, *recorder) {
	rec := &recorder{next: http.DefaultTransport}
	p := stripeproc.New(stripeproc.Config{APIBase: base, SecretKey: key, HTTPClient: &http.Client{Transport: rec}})
	return p, rec
}

// formSubset reports the keys of want whose values differ in got.
func formSubset(t *testing.T, got url.Values, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if g := got.Get(k); g != v {
			t.Errorf("form %s = %q, want %q", k, g, v)
		}
		if v == "" && got.Has(k) {
			t.Errorf("form has %s = %q, want it absent", k, got.Get(k))
		}
	}
}
