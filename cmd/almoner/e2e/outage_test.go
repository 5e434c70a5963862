package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// privateCluster is a PostgreSQL cluster of the test's own (initdb and
// pg_ctl into a temporary folder on a free port, as scripts/find-postgres.sh
// does), so the test can stop and start it under a running Almoner.
type privateCluster struct {
	t      *testing.T
	pgCtl  string
	data   string
	port   int
	asUser []string // runuser -u postgres -- when we are root
}

// pgTool finds a PostgreSQL server program on PATH or in Debian's
// versioned folders.
func pgTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		return matches[len(matches)-1]
	}
	return ""
}

func startPrivateCluster(t *testing.T) *privateCluster {
	t.Helper()
	initdb, pgCtl := pgTool("initdb"), pgTool("pg_ctl")
	if initdb == "" || pgCtl == "" {
		t.Skip("initdb/pg_ctl not installed: the outage test needs a PostgreSQL cluster of its own (apt-get install postgresql)")
	}
	dir, err := os.MkdirTemp("", "almoner-outage-")
	if err != nil {
		t.Fatal(err)
	}
	pc := &privateCluster{t: t, pgCtl: pgCtl, data: filepath.Join(dir, "pg")}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("running as root needs a postgres user to own the private cluster")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		pc.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc.port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	pc.run(initdb, "-D", pc.data, "-U", "postgres", "--auth=trust", "-E", "UTF8")
	t.Cleanup(func() {
		_ = pc.command(pc.pgCtl, "-D", pc.data, "-m", "immediate", "stop").Run()
		_ = os.RemoveAll(dir)
	})
	pc.start()
	return pc
}

func (pc *privateCluster) command(args ...string) *exec.Cmd {
	all := append(append([]string{}, pc.asUser...), args...)
	return exec.CommandContext(pc.t.Context(), all[0], all[1:]...)
}

func (pc *privateCluster) run(args ...string) {
	pc.t.Helper()
	if out, err := pc.command(args...).CombinedOutput(); err != nil {
		pc.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// start starts the server and waits until it accepts connections.
func (pc *privateCluster) start() {
	pc.t.Helper()
	pc.run(pc.pgCtl, "-D", pc.data, "-l", filepath.Join(pc.data, "server.log"), "-w",
		"-o", "-p "+strconv.Itoa(pc.port)+" -k "+pc.data+" -c listen_addresses=127.0.0.1", "start")
}

// stop stops the server the way an operator restarting it does (fast:
// sessions are terminated with admin_shutdown) and waits until it is down.
func (pc *privateCluster) stop() {
	pc.t.Helper()
	pc.run(pc.pgCtl, "-D", pc.data, "-m", "fast", "-w", "stop")
}

func (pc *privateCluster) url() string {
	return "postgres://postgres@127.0.0.1:" + strconv.Itoa(pc.port) + "/postgres?sslmode=disable"
}

// TestDatabaseOutageIs503: while PostgreSQL is down (stopped under a running
// Almoner, then started again) every request is a 503 problem document
// with Retry-After: 1 and a sanitized title, never a 500; /readyz fails
// meanwhile; and once PostgreSQL is back, requests and /readyz succeed
// without a restart of Almoner.
func TestDatabaseOutageIs503(t *testing.T) {
	t.Parallel()
	pc := startPrivateCluster(t)
	c := apptest.Start(t, apptest.Options{DatabaseURL: pc.url()})
	tn := c.NewTenant(t)
	c.Do(t, "POST", tPath(tn.ID, "/contacts"), tn.Key, map[string]any{"contactType": "Individual", "firstName": "Jane", "lastName": "Donor"}).
		Expect(t, http.StatusCreated)
	ready := func() int {
		t.Helper()
		resp, err := apptest.Get(t.Context(), c.HTTP, c.URL+"/readyz")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if got := ready(); got != http.StatusOK {
		t.Fatalf("/readyz before the outage: %d", got)
	}

	// Requests run all along, a read and a write in turn; every answer is
	// checked.
	var mu sync.Mutex
	statuses := map[int]int{}
	var bad []string
	check := func(r *apptest.Response, what string) {
		mu.Lock()
		defer mu.Unlock()
		statuses[r.Status]++
		switch r.Status {
		case http.StatusOK, http.StatusCreated:
		case http.StatusServiceUnavailable:
			var p struct {
				Type, Title, TraceID string
				Status               int
			}
			_ = json.Unmarshal(r.Body, &p)
			body := strings.ToLower(string(r.Body))
			if r.Header.Get("Retry-After") != "1" || r.Header.Get("Content-Type") != "application/problem+json" || p.Type != "/errors/unavailable" ||
				p.Title != "Service Unavailable" || p.Status != 503 || p.TraceID == "" ||
				strings.Contains(body, "sqlstate") || strings.Contains(body, "postgres") || strings.Contains(body, "connect") {
				bad = append(bad, what+": "+string(r.Body)+" Retry-After="+r.Header.Get("Retry-After"))
			}
		default:
			bad = append(bad, what+": "+strconv.Itoa(r.Status)+" "+string(r.Body))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var load sync.WaitGroup
	load.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			if i%2 == 0 {
				check(c.Do(t, "GET", tPath(tn.ID, "/contacts"), tn.Key, nil), "GET /contacts")
			} else {
				check(c.Do(t, "POST", tPath(tn.ID, "/funds"), tn.Key, map[string]any{"name": "Fund " + strconv.Itoa(i)}), "POST /funds")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	defer func() { cancel(); load.Wait() }()

	time.Sleep(200 * time.Millisecond)
	pc.stop()
	// While it is down: 503s, and /readyz fails within the health watch's
	// period (5 s).
	deadline := time.Now().Add(20 * time.Second)
	for ready() != http.StatusServiceUnavailable {
		if time.Now().After(deadline) {
			t.Fatal("/readyz did not fail while PostgreSQL was down")
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := c.Do(t, "GET", tPath(tn.ID, "/contacts"), tn.Key, nil)
	check(r, "GET /contacts, down")
	if r.Status != http.StatusServiceUnavailable {
		t.Errorf("GET /contacts while PostgreSQL is down: %d %s, want 503", r.Status, r.Body)
	}

	pc.start()
	deadline = time.Now().Add(30 * time.Second)
	for {
		r := c.Do(t, "GET", tPath(tn.ID, "/contacts"), tn.Key, nil)
		check(r, "GET /contacts, after")
		if r.Status == http.StatusOK && ready() == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not serving 30 s after PostgreSQL came back: %d %s, /readyz %d", r.Status, r.Body, ready())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	cancel()
	load.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("statuses during the run: %v", statuses)
	for _, b := range bad {
		t.Errorf("bad answer %s", b)
	}
	if statuses[http.StatusServiceUnavailable] == 0 {
		t.Error("no request met the outage")
	}
}
