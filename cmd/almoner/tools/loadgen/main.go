// Command loadgen drives HTTP load at one endpoint for `make bench`: a fixed
// number of concurrent clients for a fixed time, then one JSON line with
// requests per second and latency percentiles. It only targets the address
// it is given (loopback in make bench), and stops by itself.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

// Result is what loadgen prints.
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

// options are loadgen's flags.
type options struct {
	name, method, url, body string
	conc                    int
	dur, warm               time.Duration
	want, cycle             int
	headers                 headers
}

func main() {
	o := parseFlags()
	addr, request, err := requests(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadgen: %v\n", err)
		os.Exit(2)
	}
	// Check once that the endpoint answers as expected before loading it;
	// if not, ask again with net/http to show the answer's body.
	if !answers(o, addr, request) {
		explain(o)
		os.Exit(1)
	}
	lat, errs := load(o, addr, request)
	_ = json.NewEncoder(os.Stdout).Encode(summarize(o, lat, errs))
	if errs > 0 {
		os.Exit(1)
	}
}

// parseFlags reads the flags, or prints the usage and exits 2 when they
// leave nothing to run.
func parseFlags() options {
	var o options
	flag.StringVar(&o.name, "name", "load", "label of the result")
	flag.StringVar(&o.method, "method", "GET", "HTTP method")
	flag.StringVar(&o.url, "url", "", "target URL (required)")
	flag.StringVar(&o.body, "body", "", "request body; {{n}} is replaced by a per-request counter")
	flag.IntVar(&o.cycle, "cycle", 0, "when > 0, {{n}} counts 1..cycle and starts again (to address that many existing resources)")
	flag.IntVar(&o.conc, "c", 16, "concurrent clients")
	flag.DurationVar(&o.dur, "d", 10*time.Second, "how long to run")
	flag.DurationVar(&o.warm, "warmup", 2*time.Second, "load before measuring")
	flag.IntVar(&o.want, "status", 200, "expected status; others count as errors")
	flag.Var(&o.headers, "H", "header 'Name: value' (repeatable)")
	flag.Parse()
	if o.url == "" || o.conc < 1 || o.dur <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	return o
}

// requests returns the address to dial and the function that gives each
// request's bytes.
func requests(o options) (addr string, request func() []byte, err error) {
	// Each client writes a request rendered once (again per request only
	// when the body has {{n}}) on its own connection.
	addr, fixed, err := renderRequest(o.method, o.url, o.headers, o.body)
	if err != nil {
		return "", nil, err
	}
	if !strings.Contains(o.body, "{{n}}") {
		return addr, func() []byte { return fixed }, nil
	}
	var counter struct {
		sync.Mutex
		n int
	}
	next := func() int {
		counter.Lock()
		defer counter.Unlock()
		counter.n++
		if o.cycle > 0 && counter.n > o.cycle {
			counter.n = 1
		}
		return counter.n
	}
	return addr, func() []byte {
		_, req, _ := renderRequest(o.method, o.url, o.headers, strings.ReplaceAll(o.body, "{{n}}", fmt.Sprint(next())))
		return req
	}, nil
}

// answers reports whether one request, sent before the load, gets the
// expected status.
func answers(o options, addr string, request func() []byte) bool {
	check := &rawConn{addr: addr}
	defer check.close()
	status, err := check.do(request())
	return err == nil && status == o.want
}

// explain sends the request again with net/http and prints its answer, to
// show why the check failed.
func explain(o options) {
	req, _ := http.NewRequestWithContext(context.Background(), o.method, o.url, bytes.NewReader([]byte(strings.ReplaceAll(o.body, "{{n}}", "0"))))
	for _, h := range o.headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	if o.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		fmt.Fprintf(os.Stderr, "loadgen: %s %s answered %d: %s\n", o.method, o.url, resp.StatusCode, b)
	} else {
		fmt.Fprintf(os.Stderr, "loadgen: %v\n", err)
	}
}

// load runs the concurrent clients through the warm-up and the measured
// time, and returns the measured latencies and how many were errors.
func load(o options, addr string, request func() []byte) (lat []time.Duration, errs int) {
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		measure = time.Now().Add(o.warm)
		stop    = measure.Add(o.dur)
	)
	for range o.conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local, localErrs := client(addr, request, o.want, measure, stop)
			mu.Lock()
			lat = append(lat, local...)
			errs += localErrs
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lat, errs
}

// client is one client's requests on its own connection until stop; it
// returns the latencies of those started from measure on, and how many of
// them were errors.
func client(addr string, request func() []byte, want int, measure, stop time.Time) (lat []time.Duration, errs int) {
	c := &rawConn{addr: addr}
	defer c.close()
	lat = make([]time.Duration, 0, 4096)
	for {
		start := time.Now()
		if start.After(stop) {
			return lat, errs
		}
		status, err := c.do(request())
		d := time.Since(start)
		if start.Before(measure) {
			continue
		}
		lat = append(lat, d)
		if err != nil || status != want {
			errs++
		}
	}
}

// summarize makes the printed result of the measured latencies.
func summarize(o options, lat []time.Duration, errs int) Result {
	slices.Sort(lat)
	return Result{
		Name: o.name, Requests: len(lat), Errors: errs, RPS: float64(len(lat)) / o.dur.Seconds(),
		P50Millis: percentile(lat, 0.50), P99Millis: percentile(lat, 0.99), MaxMillis: percentile(lat, 1),
		Concurrency: o.conc, Seconds: o.dur.Seconds(),
	}
}

// percentile is the p-th quantile of the sorted latencies, in milliseconds.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return float64(sorted[i].Microseconds()) / 1000
}
