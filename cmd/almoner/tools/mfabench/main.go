// Command mfabench measures POST /api/auth/mfa/verify for `make bench`
// (scripts/bench-staff.sh). A verify spends a one-time code of a session
// waiting for its second factor, and the spec's mfa-verify policy allows 5
// attempts per user per 15 minutes, so it cannot be replayed in a loop
// like loadgen's requests: each user accepts an invitation (one token
// per line on stdin), turns TOTP on, and signs in four times; then the
// clients verify every pending session once (a TOTP code of the next time
// step, then three recovery codes), and the tool prints one JSON line
// with verifies per second and latency percentiles, as loadgen does. It
// only targets the address it is given (loopback in make bench).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/pquerna/otp/totp"
)

// Result is what mfabench prints (loadgen's shape).
type Result struct {
	Name        string  `json:"name"`
	Requests    int     `json:"requests"`
	Errors      int     `json:"errors"`
	RPS         float64 `json:"rps"`
	P50Millis   float64 `json:"p50Ms"`
	P99Millis   float64 `json:"p99Ms"`
	MaxMillis   float64 `json:"maxMs"`
	Concurrency int     `json:"concurrency"`
	Seconds     float64 `json:"seconds"`
}

// job is one verify: a pending session and the code it sends.
type job struct {
	cookie, method, code string
}

const password = "bench mfa password 42"

func main() {
	base := flag.String("base", "", "server URL, http://host:port (required)")
	conc := flag.Int("c", 16, "concurrent clients")
	flag.Parse()
	if *base == "" {
		flag.Usage()
		os.Exit(2)
	}
	var tokens []string
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if t := sc.Text(); t != "" {
			tokens = append(tokens, t)
		}
	}
	c := &client{base: *base, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conc}}}
	jobs, errs := parallel(tokens, *conc, c.prepare)
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "mfabench: prepare: %v\n", err)
		os.Exit(1)
	}
	all := slices.Concat(jobs...)
	// The TOTP codes are of the step after the one that confirmed TOTP.
	next := time.Now().Add(30 * time.Second)
	for i := range all {
		if all[i].method == "totp" {
			all[i].code, _ = totp.GenerateCode(all[i].code, next)
		}
	}
	res := c.measure(all, *conc)
	_ = json.NewEncoder(os.Stdout).Encode(res)
	if res.Errors > 0 {
		os.Exit(1)
	}
}

type client struct {
	base string
	http *http.Client
}

// call sends a JSON request and returns the body and the session cookie
// it sets; a status other than want is an error.
func (c *client) call(method, path, cookie string, body any, want int) ([]byte, string, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(context.Background(), method, c.base+path, bytes.NewReader(b))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != want {
		return nil, "", fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, out)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == "almoner_session" {
			return out, ck.Name + "=" + ck.Value, nil
		}
	}
	return out, "", nil
}

// prepare makes one user ready: accepted, TOTP on, four pending sessions.
// The TOTP job carries the secret in code until measure time.
func (c *client) prepare(token string) ([]job, error) {
	body, cookie, err := c.call("POST", "/api/auth/invitations/accept", "", map[string]string{
		"token": token, "password": password, "firstName": "Bench", "lastName": "User"}, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var signedIn struct{ User struct{ Email string } }
	if err := json.Unmarshal(body, &signedIn); err != nil {
		return nil, err
	}
	body, _, err = c.call("POST", "/api/auth/mfa/totp", cookie, struct{}{}, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var enrolled struct{ Secret string }
	if err := json.Unmarshal(body, &enrolled); err != nil {
		return nil, err
	}
	code, _ := totp.GenerateCode(enrolled.Secret, time.Now())
	body, _, err = c.call("POST", "/api/auth/mfa/totp/confirm", cookie, map[string]string{"code": code}, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var confirmed struct{ RecoveryCodes []string }
	if err := json.Unmarshal(body, &confirmed); err != nil || len(confirmed.RecoveryCodes) < 3 {
		return nil, errors.Join(err, errors.New("no recovery codes"))
	}
	jobs := []job{{method: "totp", code: enrolled.Secret}}
	for _, rc := range confirmed.RecoveryCodes[:3] {
		jobs = append(jobs, job{method: "recovery", code: rc})
	}
	for i := range jobs {
		_, pending, err := c.call("POST", "/api/auth/sign-in", "", map[string]string{"email": signedIn.User.Email, "password": password}, http.StatusOK)
		if err != nil {
			return nil, err
		}
		jobs[i].cookie = pending
	}
	return jobs, nil
}

// parallel runs f on every item with conc workers; it returns the
// results and each item's error.
func parallel[T, R any](items []T, conc int, f func(T) (R, error)) ([]R, []error) {
	out := make([]R, len(items))
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	next := make(chan int)
	for range conc {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = f(items[i])
			}
		})
	}
	for i := range items {
		next <- i
	}
	close(next)
	wg.Wait()
	return out, errs
}

// measure sends every verify with conc clients and summarizes.
func (c *client) measure(jobs []job, conc int) Result {
	start := time.Now()
	lat, failed := parallel(jobs, conc, func(j job) (time.Duration, error) {
		t := time.Now()
		_, _, err := c.call("POST", "/api/auth/mfa/verify", j.cookie, map[string]string{"method": j.method, "code": j.code}, http.StatusOK)
		return time.Since(t), err
	})
	secs := time.Since(start).Seconds()
	errs := 0
	for _, err := range failed {
		if err != nil {
			errs++
			fmt.Fprintf(os.Stderr, "mfabench: %v\n", err)
		}
	}
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	return Result{Name: "mfa-verify", Requests: len(jobs), Errors: errs, RPS: float64(len(jobs)) / secs,
		P50Millis: ms(0.5), P99Millis: ms(0.99), MaxMillis: ms(1), Concurrency: conc, Seconds: secs}
}
