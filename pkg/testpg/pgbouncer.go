package testpg

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// PgBouncer is a running PgBouncer in front of one PostgreSQL server,
// serving every database of it (a "*" entry).
type PgBouncer struct {
	// Port is its loopback TCP port.
	Port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// PgBouncerBin is where Debian's pgbouncer package installs it.
const PgBouncerBin = "/usr/sbin/pgbouncer"

// StartPgBouncer starts PgBouncer on a free port with poolMode
// (transaction, session) in front of the server server names (a
// PostgreSQL URL; its user and host are used, its database is not).
func StartPgBouncer(ctx context.Context, server, poolMode string) (*PgBouncer, error) {
	bin := PgBouncerBin
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		bin = p
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%w: pgbouncer not found (Debian: apt-get install pgbouncer)", ErrUnavailable)
	}
	o, err := currentOwner()
	if err != nil {
		return nil, err
	}
	backend, userName, err := backendOf(server)
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := tempDir(o, "almoner-pgbouncer-")
	if err != nil {
		return nil, err
	}
	b := &PgBouncer{Port: port, dir: dir, done: make(chan struct{})}
	if err := o.writeFile(filepath.Join(dir, "users.txt"), strconv.Quote(userName)+` ""`+"\n"); err != nil {
		return nil, err
	}
	ini := filepath.Join(dir, "pgbouncer.ini")
	if err := o.writeFile(ini, iniFile(backend, dir, port, poolMode)); err != nil {
		return nil, err
	}
	b.cmd = o.command(context.WithoutCancel(ctx), bin, "-q", ini)
	logf, err := os.Create(filepath.Join(dir, "stderr.log")) //nolint:gosec // our own temporary directory
	if err != nil {
		return nil, err
	}
	b.cmd.Stdout, b.cmd.Stderr = logf, logf
	if err := b.cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start pgbouncer: %w", err)
	}
	go func() { _ = b.cmd.Wait(); _ = logf.Close(); close(b.done) }()
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := waitPort(wctx, port); err != nil {
		b.Close()
		return nil, fmt.Errorf("pgbouncer: %w: %s", err, b.Log())
	}
	return b, nil
}

// iniFile is PgBouncer's configuration: every database of the backend
// through one pool each, in poolMode, trusting the loopback client as
// the backend does.
func iniFile(backend, dir string, port int, poolMode string) string {
	return fmt.Sprintf(`[databases]
* = %s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = %s
max_client_conn = 4000
default_pool_size = 10
reserve_pool_size = 5
server_reset_query =
server_check_delay = 1
ignore_startup_parameters = extra_float_digits
logfile = %s
log_connections = 0
log_disconnections = 0
admin_users = postgres
`, backend, port, filepath.Join(dir, "users.txt"), poolMode, filepath.Join(dir, "pgbouncer.log"))
}

// backendOf turns a PostgreSQL URL into PgBouncer's connection string
// for it (host, port) and the user name.
func backendOf(server string) (backend, userName string, err error) {
	u, err := url.Parse(server)
	if err != nil {
		return "", "", fmt.Errorf("testpg: parse %q: %w", server, err)
	}
	host, port := u.Hostname(), u.Port()
	if h := u.Query().Get("host"); h != "" {
		host = h
	}
	if host == "" {
		host = "/var/run/postgresql"
	}
	if port == "" {
		port = "5432"
	}
	if p := u.Query().Get("port"); p != "" {
		port = p
	}
	userName = u.User.Username()
	if q := u.Query().Get("user"); q != "" {
		userName = q
	}
	if userName == "" {
		userName = "postgres"
	}
	return fmt.Sprintf("host=%s port=%s", host, port), userName, nil
}

// URL is a URL for database through the pooler, with the rest of
// server's query (sslmode, pool settings) kept.
func (b *PgBouncer) URL(server, database string) string {
	_, userName, _ := backendOf(server)
	q := url.Values{}
	if u, err := url.Parse(server); err == nil {
		q = u.Query()
	}
	q.Del("host")
	q.Del("port")
	q.Del("user")
	q.Set("sslmode", "disable")
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?%s", url.PathEscape(userName), b.Port, database, q.Encode())
}

// Log returns PgBouncer's log.
func (b *PgBouncer) Log() string {
	var sb strings.Builder
	for _, f := range []string{"stderr.log", "pgbouncer.log"} {
		c, _ := os.ReadFile(filepath.Join(b.dir, f)) //nolint:gosec // our own temporary directory
		sb.Write(c)
	}
	return sb.String()
}

// Close stops PgBouncer and removes its files.
func (b *PgBouncer) Close() {
	if b.cmd != nil && b.cmd.Process != nil {
		_ = b.cmd.Process.Signal(os.Interrupt)
		select {
		case <-b.done:
		case <-time.After(5 * time.Second):
			_ = b.cmd.Process.Kill()
			<-b.done
		}
	}
	_ = os.RemoveAll(b.dir)
}

// Transactions returns how many transactions PgBouncer has passed to
// database (its admin console's SHOW STATS), 0 when it has none.
func (b *PgBouncer) Transactions(ctx context.Context, server, database string) (int64, error) {
	cfg, err := pgx.ParseConfig(b.URL(server, "pgbouncer"))
	if err != nil {
		return 0, err
	}
	// The admin console speaks the simple protocol only.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, fmt.Errorf("pgbouncer admin console: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, "SHOW STATS")
	if err != nil {
		return 0, fmt.Errorf("SHOW STATS: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		// Text as sent: the counters are numeric.
		raw := rows.RawValues()
		m := map[string]string{}
		for i, f := range rows.FieldDescriptions() {
			m[f.Name] = string(raw[i])
		}
		if m["database"] == database {
			return strconv.ParseInt(m["total_xact_count"], 10, 64)
		}
	}
	return 0, rows.Err()
}
