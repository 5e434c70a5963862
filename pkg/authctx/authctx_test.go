package authctx

import (
	"context"
	"testing"

	"google.golang.org/grpc/metadata"
)

func TestSystemPrincipal(t *testing.T) {
	p := System("t1", "processor:stripe", "orders:void")
	if p.Actor() != "processor:stripe" || !p.HasScope("orders:void") || p.HasScope("orders:create") {
		t.Errorf("system principal = %+v, actor %s", p, p.Actor())
	}
	md := p.MD()
	got, ok := FromIncoming(metadata.NewIncomingContext(context.Background(), md))
	if !ok || got.Actor() != "processor:stripe" || got.TenantID != "t1" {
		t.Errorf("through metadata: %+v %v", got, ok)
	}
	if k := (Principal{KeyID: "k", KeyPrefix: "ak_test_abc"}); k.Actor() != "api-key:ak_test_abc" {
		t.Errorf("key actor = %s", k.Actor())
	}
}
