package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/almoner/almoner/pkg/testpg"
)

// server is the one-process almoner this run started.
type server struct {
	cmd                      *exec.Cmd
	bin, http, grpc, metrics string
	internalKey              string
	exited                   chan struct{}
}

// startServer starts `almoner serve` on the primary, with the standby as
// its read replica, and waits until its gateway answers.
func startServer(ctx context.Context, o options, primaryURL, standbyURL string) (*server, error) {
	bin, err := absPath(o.almoner)
	if err != nil {
		return nil, err
	}
	ports := make([]string, 3)
	for i := range ports {
		p, err := testpg.FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	s := &server{bin: bin, http: ports[0], grpc: ports[1], metrics: ports[2], internalKey: hex.EncodeToString(key), exited: make(chan struct{})}
	s.cmd = exec.CommandContext(ctx, bin, "serve")
	s.cmd.Env = append(os.Environ(), "DATABASE_URL="+primaryURL, "ALMONER_READ_DATABASE_URL="+standbyURL,
		"ALMONER_HTTP_ADDR="+s.http, "ALMONER_GRPC_ADDR="+s.grpc, "ALMONER_METRICS_ADDR="+s.metrics,
		"ALMONER_INTERNAL_KEY="+s.internalKey, "ALMONER_LOG_FORMAT=text")
	if o.maxLag != "" {
		s.cmd.Env = append(s.cmd.Env, "ALMONER_READ_MAX_LAG="+o.maxLag)
	}
	logFile, err := os.Create(filepath.Join(o.out, "server.log"))
	if err != nil {
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s serve: %w", bin, err)
	}
	go func() { _ = s.cmd.Wait(); _ = logFile.Close(); close(s.exited) }()
	if err := s.waitReady(ctx); err != nil {
		s.stop() // the caller gets no server to stop
		return nil, err
	}
	return s, nil
}

// waitReady polls the gateway's readiness until it answers 200.
func (s *server) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("the server exited while starting: see its server.log")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if s.ready(ctx) {
			return nil
		}
	}
	return fmt.Errorf("the server was not ready within 2 minutes")
}

// ready says whether the gateway's /readyz answers 200 within a second.
func (s *server) ready(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.http+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// admin runs `almoner admin args…` against the server and returns its
// standard output.
func (s *server) admin(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, s.bin, append(append([]string{"admin"}, args...), "--auth-addr="+s.grpc)...)
	cmd.Env = append(os.Environ(), "ALMONER_INTERNAL_KEY="+s.internalKey)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("almoner admin %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// tenant is what the load needs: the API base, a key, how many contacts
// it has (ids 1..contacts) and a fund.
type tenant struct {
	base, key, fund string
	contacts        int
}

// provision makes the tenant, its key, n contacts and one fund. The
// orders are spread over the contacts, as a tenant's gifts are: one
// contact's gifts serialize on its giving summary (docs/cohorts.md).
func provision(ctx context.Context, s *server, n int) (tenant, error) {
	out, err := s.admin(ctx, "tenant", "create", "--name", "Replica bench", "--slug", fmt.Sprintf("replica-%d", time.Now().UnixNano()),
		"--features", "api-access:enabled")
	if err != nil {
		return tenant{}, err
	}
	var tn struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(out, &tn); err != nil {
		return tenant{}, fmt.Errorf("tenant create answered %q: %w", out, err)
	}
	out, err = s.admin(ctx, "key", "create", "--tenant", tn.ID, "--name", "bench", "--scopes", "all")
	if err != nil {
		return tenant{}, err
	}
	var k struct {
		PlainTextKey string `json:"plainTextKey"`
	}
	if err := json.Unmarshal(out, &k); err != nil {
		return tenant{}, fmt.Errorf("key create answered %q: %w", out, err)
	}
	t := tenant{base: "http://" + s.http + "/api/tenants/" + tn.ID, key: k.PlainTextKey}
	for i := 1; i <= n; i++ {
		id, err := t.create(ctx, "/contacts", fmt.Sprintf(`{"contactType":"Individual","firstName":"Replica","lastName":"Donor %d"}`, i))
		if err != nil {
			return tenant{}, err
		}
		// Contact ids are per tenant, from 1: loadgen's {{n}} names them.
		if id != strconv.Itoa(i) {
			return tenant{}, fmt.Errorf("contact %d got id %s: loadgen's -cycle needs ids 1..%d", i, id, n)
		}
	}
	t.contacts = n
	if t.fund, err = t.create(ctx, "/funds", `{"name":"General"}`); err != nil {
		return tenant{}, err
	}
	return t, nil
}

// create POSTs body to the tenant's path and returns the new id, as JSON
// text (a contact's id is a number, a fund's a string).
func (t tenant) create(ctx context.Context, path, body string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base+path, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("X-Api-Key", t.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("POST %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("POST %s answered %d: %s", path, resp.StatusCode, b)
	}
	var v struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return "", fmt.Errorf("POST %s: %w", path, err)
	}
	return string(v.ID), nil
}

// orderFlags are loadgen's flags for one cash donation order by each
// contact in turn.
func (t tenant) orderFlags() []string {
	body := `{"contactId":{{n}},"donations":[{"fundId":` + t.fund + `,"amount":25.00}],"payments":[{"paymentMethod":"Cash","amount":25.00}]}`
	return []string{"-method", "POST", "-status", "201", "-cycle", strconv.Itoa(t.contacts), "-url", t.base + "/orders", "-H", "X-Api-Key: " + t.key, "-body", body}
}

// reportFlags are loadgen's flags for one donations-by-fund run over the
// last year.
func (t tenant) reportFlags() []string {
	today := time.Now().UTC()
	body := fmt.Sprintf(`{"parameters":{"From":%q,"To":%q}}`, today.AddDate(-1, 0, 0).Format(time.DateOnly), today.AddDate(0, 0, 1).Format(time.DateOnly))
	return []string{"-method", "POST", "-status", "200", "-url", t.base + "/reports/types/donations-by-fund/run", "-H", "X-Api-Key: " + t.key, "-body", body}
}
