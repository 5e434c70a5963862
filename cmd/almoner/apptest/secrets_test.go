package apptest

import (
	"strings"
	"testing"
)

func TestSecretsNeverLoggedCatchesALeak(t *testing.T) {
	// The registries are the test binary's: start from empty ones and put
	// the others back after, or a second run (-count=2) finds the leak this
	// one makes on purpose before it makes it.
	secretsMu.Lock()
	savedSecrets, savedLogs := secrets, allLogs
	secrets, allLogs = map[string]bool{}, nil
	secretsMu.Unlock()
	t.Cleanup(func() {
		secretsMu.Lock()
		secrets, allLogs = savedSecrets, savedLogs
		secretsMu.Unlock()
	})
	key := "ak_test_ABCDEFGHIJKL_" + strings.Repeat("x", 49)
	noteSecrets([]byte(`{"plainTextKey":"` + key + `","secret":"whsec_0123456789abcdefghijKLMNOP"}`))
	logs := &SyncBuffer{}
	registerLogs(logs)
	if got := SecretsNeverLogged(); got != "" {
		t.Fatalf("clean logs reported: %s", got)
	}
	_, _ = logs.Write([]byte("level=INFO msg=oops secret=whsec_0123456789abcdefghijKLMNOP\n"))
	if got := SecretsNeverLogged(); !strings.Contains(got, "whsec_012345") {
		t.Fatalf("leak not reported: %q", got)
	}
	_, _ = logs.Write([]byte("key " + key))
	if got := SecretsNeverLogged(); strings.Count(got, "\n") != 2 {
		t.Fatalf("want two leaks, got %q", got)
	}
}
