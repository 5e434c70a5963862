package traceid

import (
	"context"
	"testing"

	"google.golang.org/grpc/metadata"
)

func TestForward(t *testing.T) {
	for _, tc := range []struct {
		name     string
		incoming metadata.MD
		want     []string
	}{
		{"the gateway's id goes on", metadata.Pairs(MetadataKey, "4bf92f3577b34da6a3ce929d0e0e4736"), []string{"4bf92f3577b34da6a3ce929d0e0e4736"}},
		{"no id, nothing added", metadata.MD{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := Forward(metadata.NewIncomingContext(context.Background(), tc.incoming))
			md, _ := metadata.FromOutgoingContext(ctx)
			if got := md.Get(MetadataKey); len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Fatalf("outgoing %s = %v, want %v", MetadataKey, got, tc.want)
			}
		})
	}
}
