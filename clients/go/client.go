package almoner

import (
	"context"
	"net/http"
)

// NewKeyClient is the client an integrator's program uses: every request
// carries key in X-Api-Key. server is the deployment's base URL
// (https://api.example.org, or http://localhost:8080 for make run).
func NewKeyClient(server, key string, opts ...ClientOption) (*ClientWithResponses, error) {
	withKey := WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("X-Api-Key", key)
		return nil
	})
	return NewClientWithResponses(server, append([]ClientOption{withKey}, opts...)...)
}
