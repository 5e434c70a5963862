package main

import (
	"context"
	"strings"
	"testing"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
)

// TestAdminProcessorCommands drives `almoner admin tenant processor` as an
// operator would: one JSON object each, never a key in it, in an error or
// in the services' logs. Not parallel: one step passes the keys in the
// environment (t.Setenv).
func TestAdminProcessorCommands(t *testing.T) {
	c := startCluster(t)
	addr := "--auth-addr=" + c.GRPCAddr
	const (
		secretKey     = "sk_test_51AdminCommandTest0123456789wxyz"
		rotatedKey    = "rk_test_51AdminCommandRotated987654321QRST"
		webhookSecret = "whsec_AdminCommandWebhookSecret0123456789"
		liveKey       = "sk_live_51AdminCommandLiveKey0123456789LIVE"
	)
	secrets := []string{secretKey, rotatedKey, webhookSecret, liveKey}
	noSecret := func(what, s string) {
		t.Helper()
		for _, secret := range secrets {
			// The hint's last four are allowed; anything longer is a leak.
			if strings.Contains(s, secret) || strings.Contains(s, secret[8:16]) {
				t.Errorf("%s holds a secret (%s…): %s", what, secret[:12], s)
			}
		}
	}

	code, out, errOut := runCLI(t, "admin", "tenant", "create", "--name", "Processor Test", "--slug", "processor-test", addr)
	if code != 0 {
		t.Fatalf("tenant create: %d %s", code, errOut)
	}
	id := decodeObject(t, out)["id"].(string)
	want := func(what, out string, configured bool, mode, hint string) {
		t.Helper()
		noSecret(what, out)
		got := decodeObject(t, out)
		provider := ""
		if configured {
			provider = "stripe"
		}
		exp := map[string]any{"tenantId": id, "provider": provider, "mode": mode, "configured": configured, "keyHint": hint}
		if len(got) != len(exp) {
			t.Errorf("%s: %s, want exactly %v", what, out, exp)
		}
		for k, v := range exp {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v (%s)", what, k, got[k], v, out)
			}
		}
	}

	code, out, errOut = runCLI(t, "admin", "tenant", "processor", "get", "--tenant", id, addr)
	if code != 0 {
		t.Fatalf("get: %d %s", code, errOut)
	}
	want("get before set", out, false, "", "")

	code, out, errOut = runCLI(t, "admin", "tenant", "processor", "set", "--tenant", id, "--provider", "stripe", "--secret-key", secretKey, "--webhook-secret", webhookSecret, addr)
	if code != 0 {
		t.Fatalf("set: %d %s", code, errOut)
	}
	want("set", out, true, "test", "sk_test_…wxyz")
	noSecret("set's stderr", errOut)
	code, out, _ = runCLI(t, "admin", "tenant", "processor", "get", "--tenant", id, addr)
	if code != 0 {
		t.Fatalf("get: exit %d", code)
	}
	want("get after set", out, true, "test", "sk_test_…wxyz")

	// What the orders service reads: the keys the operator gave.
	creds, err := c.Credentials.GetProcessorCredentials(context.Background(), &authv1.GetProcessorCredentialsRequest{TenantSlug: "processor-test"})
	if err != nil || creds.GetTenantId() != id || creds.GetSecretKey() != secretKey || creds.GetWebhookSecret() != webhookSecret || creds.GetMode() != "test" {
		t.Fatalf("credentials after set: %v, %v", creds, err)
	}

	// Keys from the environment, out of the process list.
	t.Setenv(processorSecretKeyVar, rotatedKey)
	t.Setenv(processorWebhookSecretVar, webhookSecret)
	code, out, errOut = runCLI(t, "admin", "tenant", "processor", "set", "--tenant", id, addr)
	if code != 0 {
		t.Fatalf("set from the environment: %d %s", code, errOut)
	}
	want("set from the environment", out, true, "test", "rk_test_…QRST")
	t.Setenv(processorSecretKeyVar, "")
	t.Setenv(processorWebhookSecretVar, "")

	errCases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--tenant", id, "--secret-key", liveKey, "--webhook-secret", webhookSecret}, 1, "SecretKey: 'SecretKey' is a key of the other mode: this sandbox deployment accepts only keys starting with sk_test_ or rk_test_"},
		{[]string{"--tenant", id, "--secret-key", secretKey, "--webhook-secret", "0123456789abcdefghij"}, 1, "WebhookSecret: 'WebhookSecret' must be the endpoint's signing secret, starting with whsec_"},
		{[]string{"--tenant", id, "--provider", "paypal", "--secret-key", secretKey, "--webhook-secret", webhookSecret}, 1, "'Provider' must be 'stripe'"},
		{[]string{"--tenant", id, "--secret-key", secretKey}, 2, "--secret-key and --webhook-secret are required"},
		{[]string{"--secret-key", secretKey, "--webhook-secret", webhookSecret}, 2, "--tenant is required"},
		{[]string{"--tenant", "00000000-0000-0000-0000-000000000000", "--secret-key", secretKey, "--webhook-secret", webhookSecret}, 1, "not found"},
	}
	for _, ec := range errCases {
		args := append([]string{"admin", "tenant", "processor", "set"}, append(ec.args, addr)...)
		code, out, errOut := runCLI(t, args...)
		if code != ec.code || out != "" || !strings.Contains(errOut, ec.msg) {
			t.Errorf("set %v: exit %d, stdout %q, stderr %q; want exit %d mentioning %q", ec.args[1:], code, out, errOut, ec.code, ec.msg)
		}
		noSecret("the error of set", errOut)
	}
	for _, args := range [][]string{
		{"admin", "tenant", "processor", "get", "--tenant", "00000000-0000-0000-0000-000000000000", addr},
		{"admin", "tenant", "processor", "clear", "--tenant", "not-a-tenant", addr},
	} {
		if code, out, errOut := runCLI(t, args...); code != 1 || out != "" || !strings.Contains(errOut, "not found") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args[3:], code, out, errOut)
		}
	}
	for _, args := range [][]string{{"admin", "tenant", "processor"}, {"admin", "tenant", "processor", "rotate", "--tenant", id}} {
		if code, _, errOut := runCLI(t, args...); code != 2 || !strings.Contains(errOut, "processor set|get|clear") && !strings.Contains(errOut, "usage: almoner admin tenant processor set") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	// The failed sets changed nothing.
	if _, out, _ := runCLI(t, "admin", "tenant", "processor", "get", "--tenant", id, addr); !strings.Contains(out, "rk_test_…QRST") {
		t.Errorf("after failed sets: %s", out)
	}

	code, out, errOut = runCLI(t, "admin", "tenant", "processor", "clear", "--tenant", id, addr)
	if code != 0 {
		t.Fatalf("clear: %d %s", code, errOut)
	}
	want("clear", out, false, "", "")
	code, out, _ = runCLI(t, "admin", "tenant", "processor", "get", "--tenant", id, addr)
	if code != 0 {
		t.Fatalf("get after clear: exit %d", code)
	}
	want("get after clear", out, false, "", "")
	noSecret("the services' logs", c.Logs.String())
}
