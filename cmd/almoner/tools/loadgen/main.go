// Command loadgen drives HTTP load at one endpoint for `make bench`: a fixed
// number of concurrent clients for a fixed time, then one JSON line with
// requests per second and latency percentiles. It only targets the address
// it is given (loopback in make bench), and stops by itself.
package main

import (
	"bytes"
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

func main() {
	var hs headers
	name := flag.String("name", "load", "label of the result")
	method := flag.String("method", "GET", "HTTP method")
	url := flag.String("url", "", "target URL (required)")
	body := flag.String("body", "", "request body; {{n}} is replaced by a per-request counter")
	conc := flag.Int("c", 16, "concurrent clients")
	dur := flag.Duration("d", 10*time.Second, "how long to run")
	warm := flag.Duration("warmup", 2*time.Second, "load before measuring")
	want := flag.Int("status", 200, "expected status; others count as errors")
	flag.Var(&hs, "H", "header 'Name: value' (repeatable)")
	flag.Parse()
	if *url == "" || *conc < 1 || *dur <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	var counter struct {
		sync.Mutex
		n int
	}
	next := func() int {
		counter.Lock()
		defer counter.Unlock()
		counter.n++
		return counter.n
	}
	// Each client writes a request rendered once (again per request only
	// when the body has {{n}}) on its own connection.
	perRequest := strings.Contains(*body, "{{n}}")
	addr, fixed, err := renderRequest(*method, *url, hs, *body)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadgen: %v\n", err)
		os.Exit(2)
	}
	request := func() []byte {
		if !perRequest {
			return fixed
		}
		_, req, _ := renderRequest(*method, *url, hs, strings.ReplaceAll(*body, "{{n}}", fmt.Sprint(next())))
		return req
	}

	// Check once that the endpoint answers as expected before loading it;
	// if not, ask again with net/http to show the answer's body.
	check := &rawConn{addr: addr}
	status, err := check.do(request())
	check.close()
	if err != nil || status != *want {
		req, _ := http.NewRequest(*method, *url, bytes.NewReader([]byte(strings.ReplaceAll(*body, "{{n}}", "0"))))
		for _, h := range hs {
			k, v, _ := strings.Cut(h, ":")
			req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
		}
		if *body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			fmt.Fprintf(os.Stderr, "loadgen: %s %s answered %d: %s\n", *method, *url, resp.StatusCode, b)
		} else {
			fmt.Fprintf(os.Stderr, "loadgen: %v\n", err)
		}
		os.Exit(1)
	}

	var (
		mu      sync.Mutex
		lat     []time.Duration
		errs    int
		wg      sync.WaitGroup
		measure = time.Now().Add(*warm)
		stop    = measure.Add(*dur)
	)
	for range *conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &rawConn{addr: addr}
			defer c.close()
			local := make([]time.Duration, 0, 4096)
			localErrs := 0
			for {
				start := time.Now()
				if start.After(stop) {
					break
				}
				status, err := c.do(request())
				d := time.Since(start)
				if start.Before(measure) {
					continue
				}
				local = append(local, d)
				if err != nil || status != *want {
					localErrs++
				}
			}
			mu.Lock()
			lat = append(lat, local...)
			errs += localErrs
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		i := int(float64(len(lat)-1) * p)
		return float64(lat[i].Microseconds()) / 1000
	}
	r := Result{
		Name: *name, Requests: len(lat), Errors: errs, RPS: float64(len(lat)) / dur.Seconds(),
		P50Millis: pct(0.50), P99Millis: pct(0.99), MaxMillis: pct(1), Concurrency: *conc, Seconds: dur.Seconds(),
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
	if errs > 0 {
		os.Exit(1)
	}
}
