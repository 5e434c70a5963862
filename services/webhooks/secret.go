package webhooks

import (
	"crypto/rand"
	"encoding/base64"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/secretbox"
)

// secretPrefix starts every signing secret.
const secretPrefix = "whsec_"

// newSecret returns a signing secret: whsec_ and 32 random bytes in
// URL-safe base64 (43 characters).
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return secretPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// errSecretUnavailable is the recorded reason of a delivery whose
// endpoint's signing secret does not open with this process's key. It is
// shown to the tenant with the delivery, so it names no setting; the log
// line beside it tells the operator which one.
const errSecretUnavailable = "signing secret cannot be unsealed with the server's current key; re-create the endpoint for a new secret"

// openSecret opens an endpoint's signing secret. One that does not open
// (the key changed since it was sealed, or a process ran with a random key
// of its own) is never skipped silently: it is logged for the operator,
// naming the setting, and ok is false so that the caller records a failed
// attempt (unsealFailed) that the tenant sees in the endpoint's deliveries.
func (s *Service) openSecret(tenantID, endpointID uuid.UUID, box []byte) (secret string, ok bool) {
	pt, err := s.sealer.Open(box, endpointID[:])
	if err != nil {
		s.logger.Error("webhooks: an endpoint's signing secret cannot be unsealed: "+secretbox.KeyVar+
			" is not the key that sealed it; the delivery is recorded as failed",
			"tenant_id", tenantID.String(), "endpoint_id", endpointID.String())
		return "", false
	}
	return string(pt), true
}

// unsealFailed is the attempt recorded instead of a send when the secret
// does not open.
func unsealFailed() result {
	id, _ := uuid.NewV7()
	return result{deliveryID: id, started: time.Now(), err: errSecretUnavailable}
}
