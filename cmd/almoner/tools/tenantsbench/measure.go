package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Round is one measure call's result: every scenario's latencies against
// one server and database.
type Round struct {
	Label string `json:"label"`
	Round int    `json:"round"`
	// LoadAvg is /proc/loadavg's first three fields before and after.
	LoadAvgBefore string     `json:"loadAvgBefore"`
	LoadAvgAfter  string     `json:"loadAvgAfter"`
	Started       time.Time  `json:"started"`
	Scenarios     []Measured `json:"scenarios"`
}

// Measured is one scenario's latencies, in milliseconds, in the order the
// requests finished, and how many of them did not answer as expected.
type Measured struct {
	Name      string    `json:"name"`
	Latencies []float64 `json:"latenciesMs"`
	Errors    int       `json:"errors"`
}

// scenario is one read to time: a request and the status it must get.
type scenario struct {
	name, method, url, key, body string
}

// Scenario names, in the order measured and reported.
const (
	scSmallContacts     = "contacts page 1 (small tenant)"
	scLargeContacts     = "contacts page 1 (large tenant)"
	scLargeContactsDeep = "contacts page 1,000 by pageToken (large tenant)"
	scSmallOrder        = "order by id (small tenant)"
	scSmallReport       = "report run, donations-by-fund (small tenant)"
	scSmallEvents       = "event feed, first page (small tenant)"
)

// scenarioOrder is the order of the report's rows.
var scenarioOrder = []string{scSmallContacts, scLargeContacts, scLargeContactsDeep, scSmallOrder, scSmallReport, scSmallEvents}

// measureConfig is what measure needs to know.
type measureConfig struct {
	base                    string
	smallTenant, smallKey   string
	largeTenant, largeKey   string
	requests, clients, warm int
	deepPage                int
	label                   string
	round                   int
}

func runMeasure(args []string) error {
	fs := flag.NewFlagSet("measure", flag.ContinueOnError)
	var c measureConfig
	fs.StringVar(&c.base, "base", "http://127.0.0.1:18090", "the server's HTTP address")
	fs.StringVar(&c.smallTenant, "small-tenant", "", "small tenant id")
	fs.StringVar(&c.smallKey, "small-key", "", "an API key of the small tenant with every scope")
	fs.StringVar(&c.largeTenant, "large-tenant", "", "large tenant id (none: only the small tenant's reads)")
	fs.StringVar(&c.largeKey, "large-key", "", "an API key of the large tenant with every scope")
	fs.IntVar(&c.requests, "requests", 200, "measured requests per scenario")
	fs.IntVar(&c.clients, "clients", 4, "concurrent clients")
	fs.IntVar(&c.warm, "warmup", 20, "requests per scenario before measuring")
	fs.IntVar(&c.deepPage, "deep-page", 1000, "the large tenant's deep page, reached by pageToken")
	fs.StringVar(&c.label, "label", "", "the database's label in the report (A, B)")
	fs.IntVar(&c.round, "round", 1, "round number, for the report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.smallTenant == "" || c.smallKey == "" || (c.largeTenant != "") != (c.largeKey != "") || c.label == "" ||
		c.requests < 1 || c.clients < 1 || c.deepPage < 2 {
		return errors.New("measure: -small-tenant, -small-key and -label are required, -large-key with -large-tenant; positive sizes, -deep-page >= 2")
	}
	r, err := measure(context.Background(), c)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// measure prepares the scenarios (an order id of the small tenant, the
// token of the large tenant's deep page), then runs each: warm-up
// requests, then c.requests timed ones from c.clients clients. Without a
// large tenant it times the small tenant's reads only.
func measure(ctx context.Context, c measureConfig) (Round, error) {
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		MaxIdleConnsPerHost: c.clients, DisableCompression: true,
	}}
	defer client.CloseIdleConnections()
	small := strings.TrimRight(c.base, "/") + "/api/tenants/" + url.PathEscape(c.smallTenant)

	var orders struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if err := getJSON(ctx, client, small+"/orders?pageSize=1", c.smallKey, &orders); err != nil {
		return Round{}, err
	}
	if len(orders.Items) == 0 {
		return Round{}, errors.New("measure: the small tenant has no orders")
	}
	today := time.Now().UTC()
	report := fmt.Sprintf(`{"parameters":{"From":%q,"To":%q}}`, today.AddDate(-1, 0, 0).Format(time.DateOnly), today.Format(time.DateOnly))
	scenarios := []scenario{
		{name: scSmallContacts, method: http.MethodGet, url: small + "/contacts", key: c.smallKey},
		{name: scSmallOrder, method: http.MethodGet, url: small + "/orders/" + url.PathEscape(orders.Items[0].ID), key: c.smallKey},
		{name: scSmallReport, method: http.MethodPost, url: small + "/reports/types/donations-by-fund/run", key: c.smallKey, body: report},
		{name: scSmallEvents, method: http.MethodGet, url: small + "/events", key: c.smallKey},
	}
	if c.largeTenant != "" {
		large := strings.TrimRight(c.base, "/") + "/api/tenants/" + url.PathEscape(c.largeTenant)
		token, err := walkToPage(ctx, client, large+"/contacts", c.largeKey, c.deepPage)
		if err != nil {
			return Round{}, err
		}
		scenarios = append(scenarios,
			scenario{name: scLargeContacts, method: http.MethodGet, url: large + "/contacts", key: c.largeKey},
			scenario{name: scLargeContactsDeep, method: http.MethodGet, url: large + "/contacts?pageToken=" + url.QueryEscape(token), key: c.largeKey})
	}
	r := Round{Label: c.label, Round: c.round, Started: time.Now().UTC(), LoadAvgBefore: loadAvg()}
	for _, s := range scenarios {
		m, err := run(ctx, client, s, c)
		if err != nil {
			return Round{}, err
		}
		r.Scenarios = append(r.Scenarios, m)
	}
	r.LoadAvgAfter = loadAvg()
	return r, nil
}

// run checks that s answers 200 with a body, warms it up, then times
// c.requests requests from c.clients clients, each on its own keep-alive
// connection.
func run(ctx context.Context, client *http.Client, s scenario, c measureConfig) (Measured, error) {
	if status, body, err := do(ctx, client, s); err != nil {
		return Measured{}, fmt.Errorf("measure %s: %s %s: %w", s.name, s.method, s.url, err)
	} else if status != http.StatusOK {
		return Measured{}, fmt.Errorf("measure %s: %s %s answered %d: %s", s.name, s.method, s.url, status, body)
	}
	for range c.warm {
		if _, _, err := do(ctx, client, s); err != nil {
			return Measured{}, fmt.Errorf("measure %s: warm-up: %w", s.name, err)
		}
	}
	m := Measured{Name: s.name, Latencies: make([]float64, 0, c.requests)}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		left atomic.Int64
	)
	left.Store(int64(c.requests))
	for range c.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				start := time.Now()
				status, _, err := do(ctx, client, s)
				ms := float64(time.Since(start).Microseconds()) / 1000
				mu.Lock()
				m.Latencies = append(m.Latencies, ms)
				if err != nil || status != http.StatusOK {
					m.Errors++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return m, nil
}

// do sends s once and reads the whole answer.
func do(ctx context.Context, client *http.Client, s scenario) (int, []byte, error) {
	var body io.Reader
	if s.body != "" {
		body = strings.NewReader(s.body)
	}
	req, err := http.NewRequestWithContext(ctx, s.method, s.url, body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-Api-Key", s.key)
	if s.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// getJSON GETs u and decodes its 200 answer into v.
func getJSON(ctx context.Context, client *http.Client, u, key string, v any) error {
	status, body, err := do(ctx, client, scenario{method: http.MethodGet, url: u, key: key})
	if err != nil {
		return fmt.Errorf("measure: GET %s: %w", u, err)
	}
	if status != http.StatusOK {
		return fmt.Errorf("measure: GET %s answered %d: %s", u, status, body)
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(v); err != nil {
		return fmt.Errorf("measure: GET %s: %w", u, err)
	}
	return nil
}

// walkToPage follows the list's nextPageToken from page 1 and returns the
// token that leads to page (docs/contacts.md: a token carries the last id,
// the page number and the count, so the deep page costs a keyset step).
func walkToPage(ctx context.Context, client *http.Client, list, key string, page int) (string, error) {
	var p struct {
		Page          int    `json:"page"`
		NextPageToken string `json:"nextPageToken"`
	}
	u, token := list, ""
	for n := 1; n < page; n++ {
		if err := getJSON(ctx, client, u, key, &p); err != nil {
			return "", err
		}
		if p.Page != n || p.NextPageToken == "" {
			return "", fmt.Errorf("measure: page %d of %s answered page %d, next token %q: fewer than %d pages?", n, list, p.Page, p.NextPageToken, page)
		}
		token = p.NextPageToken
		u = list + "?pageToken=" + url.QueryEscape(token)
	}
	if err := getJSON(ctx, client, u, key, &p); err != nil {
		return "", err
	}
	if p.Page != page {
		return "", fmt.Errorf("measure: the token of page %d answered page %d", page, p.Page)
	}
	return token, nil
}

// loadAvg is the machine's load average (1, 5 and 15 minutes), or "" off
// Linux.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
