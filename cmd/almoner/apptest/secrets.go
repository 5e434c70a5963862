package apptest

import (
	"regexp"
	"sync"
)

var (
	secretsMu sync.Mutex
	secrets   = map[string]bool{}
	allLogs   []*SyncBuffer
)

// secretPattern finds the secrets responses carry: API keys and webhook
// signing secrets.
var secretPattern = regexp.MustCompile(`(ak_(?:test|live)_[0-9A-Za-z]{12}_[0-9A-Za-z]{49}|whsec_[0-9A-Za-z_\-+/=]{20,})`)

// RegisterSecret adds a secret that must never be logged.
func RegisterSecret(s string) {
	secretsMu.Lock()
	defer secretsMu.Unlock()
	secrets[s] = true
}

// noteSecrets registers every secret found in b.
func noteSecrets(b []byte) {
	for _, m := range secretPattern.FindAll(b, -1) {
		RegisterSecret(string(m))
	}
}

func registerLogs(l *SyncBuffer) {
	secretsMu.Lock()
	defer secretsMu.Unlock()
	allLogs = append(allLogs, l)
}
