// Command loadgen drives HTTP load at one endpoint for `make bench`: a fixed
// number of concurrent clients for a fixed time, then one JSON line with
// requests per second and latency percentiles. It only targets the address
// it is given (loopback in make bench), and stops by itself.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
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
	flag.StringVar(&o.body, "body", "", "request body; {{n}} is replaced by a per-request counter, {{random:LO:HI}} by an integer "+
		"drawn uniformly from LO..HI (both included) for each request, as pgbench's random(LO, HI)")
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
	// when the body has a template) on its own connection.
	addr, fixed, err := renderRequest(o.method, o.url, o.headers, o.body)
	if err != nil {
		return "", nil, err
	}
	randoms, err := parseRandoms(o.body)
	if err != nil {
		return "", nil, err
	}
	counted := strings.Contains(o.body, "{{n}}")
	if !counted && len(randoms) == 0 {
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
		body := o.body
		if counted {
			body = strings.ReplaceAll(body, "{{n}}", fmt.Sprint(next()))
		}
		for _, r := range randoms {
			body = strings.Replace(body, r.token, strconv.FormatInt(r.draw(), 10), 1)
		}
		_, req, _ := renderRequest(o.method, o.url, o.headers, body)
		return req
	}, nil
}

// randomToken is {{random:LO:HI}} in a body.
var randomToken = regexp.MustCompile(`\{\{random:(-?[0-9]+):(-?[0-9]+)\}\}`)

// random is one {{random:LO:HI}} of a body: each request replaces it with
// a number drawn from lo..hi, to spread requests over that many existing
// resources (bench-writes.sh: orders over many contacts) the way pgbench's
// random(lo, hi) spreads a floor's transactions.
type random struct {
	token  string
	lo, hi int64
}

func (r random) draw() int64 { return r.lo + rand.Int64N(r.hi-r.lo+1) }

// parseRandoms finds the body's {{random:LO:HI}}, in order; an empty range
// is an error.
func parseRandoms(body string) ([]random, error) {
	var out []random
	for _, m := range randomToken.FindAllStringSubmatch(body, -1) {
		lo, err1 := strconv.ParseInt(m[1], 10, 64)
		hi, err2 := strconv.ParseInt(m[2], 10, 64)
		if err1 != nil || err2 != nil || hi < lo || hi-lo+1 <= 0 {
			return nil, fmt.Errorf("%s: want {{random:LO:HI}} with LO <= HI", m[0])
		}
		out = append(out, random{token: m[0], lo: lo, hi: hi})
	}
	if strings.Contains(randomToken.ReplaceAllString(body, ""), "{{random:") {
		return nil, errors.New("a {{random:...}} in the body is not {{random:LO:HI}} with integers")
	}
	return out, nil
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
	req, _ := http.NewRequestWithContext(context.Background(), o.method, o.url, bytes.NewReader([]byte(strings.ReplaceAll(randomToken.ReplaceAllString(o.body, "$1"), "{{n}}", "0"))))
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
