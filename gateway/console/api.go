package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
)

// The cookies the auth service sets (docs/auth.md).
const (
	sessionCookie = "almoner_session"
	deviceCookie  = "almoner_device"
	// devicePath is where the console keeps the trusted-device cookie:
	// the API sets it on /api/auth, which a browser never sends to a
	// console page, so the console moves it to the sign-in pages, the one
	// place it is read (and hands it to the sign-in route itself).
	devicePath = Prefix + "/sign-in"
)

// result is an in-process answer of the REST API.
type result struct {
	Status int
	Header http.Header
	Body   []byte
}

// recorder is the http.ResponseWriter of an in-process call.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// Flush makes the recorder an http.Flusher, as a streamed route expects.
func (w *recorder) Flush() {}

// call sends one request to the gateway's REST routes in-process, as the
// browser's request: its session cookie (never a key), its address and
// forwarded-for chain (the rate limits and the security log see the
// person, not the console) and its User-Agent. withDevice also sends the
// trusted-device cookie, for sign-in. A body is sent as JSON.
func (c *Console) call(r *http.Request, method, path string, body any, withDevice bool) result {
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return result{Status: http.StatusInternalServerError}
		}
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(r.Context(), method, path, rd)
	if err != nil {
		return result{Status: http.StatusBadRequest}
	}
	req.Host = r.Host
	req.RemoteAddr = r.RemoteAddr
	for _, h := range []string{"User-Agent", "X-Forwarded-For", "Traceparent"} {
		if v := r.Header.Values(h); len(v) > 0 {
			req.Header[h] = slices.Clone(v)
		}
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if ck, err := r.Cookie(sessionCookie); err == nil {
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: ck.Value})
	}
	if ck, err := r.Cookie(deviceCookie); withDevice && err == nil {
		req.AddCookie(&http.Cookie{Name: deviceCookie, Value: ck.Value})
	}
	rec := &recorder{header: http.Header{}}
	c.api.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return result{Status: rec.status, Header: rec.header, Body: rec.body.Bytes()}
}

// get and send are call without the device cookie.
func (c *Console) get(r *http.Request, path string) result {
	return c.call(r, http.MethodGet, path, nil, false)
}

func (c *Console) send(r *http.Request, method, path string, body any) result {
	return c.call(r, method, path, body, false)
}

// ok reports a 2xx answer.
func (res result) ok() bool { return res.Status >= 200 && res.Status < 300 }

// decode reads a JSON answer into v.
func (res result) decode(v any) error {
	if err := json.Unmarshal(res.Body, v); err != nil {
		return fmt.Errorf("console: decode answer %d: %w", res.Status, err)
	}
	return nil
}

// problemDoc is the part of an RFC 7807 answer a page shows.
type problemDoc struct {
	Title   string              `json:"title"`
	Errors  map[string][]string `json:"errors"`
	TraceID string              `json:"traceId"`
}

// message says in words why the API refused: the spec's 429 as "too many
// attempts", a 401 as an ended session, otherwise the problem's title and
// each of its errors (with the field it is under).
func (res result) message() string {
	switch res.Status {
	case http.StatusTooManyRequests:
		return "Too many attempts, try again later."
	case http.StatusUnauthorized:
		return "You are not signed in, or your session has ended. Sign in again."
	}
	var p problemDoc
	_ = json.Unmarshal(res.Body, &p)
	var parts []string
	keys := make([]string, 0, len(p.Errors))
	for k := range p.Errors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, m := range p.Errors[k] {
			if k == "" || strings.HasPrefix(m, k) {
				parts = append(parts, m)
			} else {
				parts = append(parts, k+": "+m)
			}
		}
	}
	title := p.Title
	if title == "" {
		title = http.StatusText(res.Status)
	}
	if len(parts) > 0 && strings.HasPrefix(title, "One or more validation errors") {
		return strings.Join(parts, " ")
	}
	if len(parts) > 0 {
		title += ": " + strings.Join(parts, " ")
	}
	if res.Status >= 500 && p.TraceID != "" {
		title += " (trace " + p.TraceID + ")"
	}
	return title
}

// passCookies hands the browser the cookies an API answer set: the
// session cookie as the API made it; the trusted-device cookie moved to
// the console's sign-in pages (devicePath).
func passCookies(w http.ResponseWriter, res result) {
	for _, line := range res.Header.Values("Set-Cookie") {
		ck, err := http.ParseSetCookie(line)
		if err != nil {
			continue
		}
		switch ck.Name {
		case sessionCookie:
			w.Header().Add("Set-Cookie", line)
		case deviceCookie:
			ck.Path = devicePath
			w.Header().Add("Set-Cookie", ck.String())
		}
	}
}
