package e2e

import (
	"context"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/mail/mailtest"
)

// TestConsoleInBrowser runs tests/browser/console.test.mjs (playwright-core
// driving Debian's Chromium, one browser launch) against a real server and
// Mailpit: the owner's invitation email, acceptance, TOTP enrollment from
// the QR page's secret, sign-out and sign-in with a code, a webhook
// endpoint and an API key made and used (the contact it creates is
// delivered and shows in the delivery log), a viewer invited who does not
// see the keys page, and an operator who impersonates the owner, sees the
// banner and the refusal of a key. axe-core runs on every page;
// screenshots at desktop and 375 px go to ALMONER_ARTIFACTS (else
// dist/artifacts). In CI a missing browser or node is a failure.
func TestConsoleInBrowser(t *testing.T) {
	dir, err := filepath.Abs("../../../tests/browser")
	if err != nil {
		t.Fatal(err)
	}
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	_, nodeErr := exec.LookPath("node")
	_, chromeErr := os.Stat(chromium)
	_, modErr := os.Stat(filepath.Join(dir, "node_modules", "axe-core"))
	if nodeErr != nil || chromeErr != nil || modErr != nil {
		msg := "needs node, " + chromium + " and tests/browser/node_modules (npm ci in tests/browser)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Parallel()
	pit := mailtest.Shared(t)
	rc := newReceiver(t, nil)
	settings := devSettings(caFile(t, rc))
	maps.Copy(settings, map[string]string{
		"ALMONER_SMTP_URL": pit.SMTPURL, "ALMONER_MAIL_INTERVAL": "20ms",
		// The links' origin: plain http, so the cookies are not Secure
		// for the browser on 127.0.0.1; the page takes the links' paths.
		"ALMONER_PUBLIC_URL":        "http://console.example.test",
		"ALMONER_ARGON2_MEMORY_KIB": "64", "ALMONER_ARGON2_TIME": "1",
	})
	c := apptest.Start(t, apptest.Options{Settings: settings})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	ownerEmail := staffEmail("console-owner")
	inv, err := c.Admin.InviteUser(context.Background(), &authv1.InviteUserRequest{TenantId: tn.ID, Email: ownerEmail, Role: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	apptest.RegisterSecret(inv.GetInvitationToken())
	const opPassword = "granite ferry 77 osprey"
	opEmail := staffEmail("console-operator")
	opSecret := consoleOperator(t, c, opEmail, opPassword)

	artifacts := os.Getenv("ALMONER_ARTIFACTS")
	if artifacts == "" {
		artifacts = filepath.Join(dir, "..", "..", "dist", "artifacts")
	}
	cmd := exec.CommandContext(t.Context(), "node", "--test", "--test-timeout=420000", "console.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ALMONER_CONSOLE_URL="+c.URL, "MAILPIT_API="+pit.APIURL, "TENANT_ID="+tn.ID, "TENANT_SEARCH=TestConsoleInBrowser",
		"OWNER_EMAIL="+ownerEmail, "OWNER_ID="+inv.GetUserId(), "VIEWER_EMAIL="+staffEmail("console-viewer"),
		"OPERATOR_EMAIL="+opEmail, "OPERATOR_PASSWORD="+opPassword, "OPERATOR_TOTP="+opSecret,
		"RECEIVER_URL="+rc.srv.URL+"/hook", "ARTIFACTS="+artifacts, "CHROMIUM="+chromium)
	out, err := cmd.CombinedOutput()
	if err != nil {
		rows, _ := dbConn(t, c.DatabaseURL).Query(context.Background(), `SELECT event, entity_type, actor FROM audit.events WHERE tenant_id = $1 ORDER BY id`, tn.ID)
		for rows.Next() {
			var a, b, d string
			_ = rows.Scan(&a, &b, &d)
			t.Logf("audit %s %s %s", a, b, d)
		}
		t.Logf("receiver got %d", len(rc.requests()))
		t.Fatalf("browser test failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "# pass 1") {
		t.Fatalf("browser test ran nothing:\n%s", out)
	}
	shots, _ := filepath.Glob(filepath.Join(artifacts, "console-*-phone.png"))
	if len(shots) < 10 {
		t.Fatalf("%d phone screenshots in %s", len(shots), artifacts)
	}
	if len(rc.requests()) == 0 {
		t.Fatal("the receiver got no delivery")
	}
	t.Logf("console screenshots: %s", artifacts)
}

// consoleOperator makes a support operator with TOTP on and returns its
// secret (operatorWithID, without its check of Secure cookies: this
// cluster's public URL is http).
func consoleOperator(t *testing.T, c *apptest.Cluster, email, pw string) string {
	t.Helper()
	inv, err := c.Admin.InviteOperator(context.Background(), &authv1.InviteOperatorRequest{Email: email, Role: "support"})
	if err != nil {
		t.Fatal(err)
	}
	apptest.RegisterSecret(inv.GetInvitationToken())
	cookie := cookieOf(t, accept(t, c, inv.GetInvitationToken(), pw).Expect(t, http.StatusOK), "almoner_session")
	enrolled := asUser(t, c, "POST", "/api/auth/mfa/totp", cookie, nil).Expect(t, http.StatusOK).Map(t)
	secret, _ := enrolled["secret"].(string)
	apptest.RegisterSecret(secret)
	asUser(t, c, "POST", "/api/auth/mfa/totp/confirm", cookie, map[string]any{"code": totpCode(t, secret, time.Now())}).Expect(t, http.StatusOK)
	return secret
}
