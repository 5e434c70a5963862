package authctx

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/imports/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	_ "github.com/almoner/almoner/pkg/api/almoner/webhooks/v1"
)

// TestRefusedMethodsExist: every method of the table is a generated RPC,
// so a rename cannot silently open it.
func TestRefusedMethodsExist(t *testing.T) {
	for m := range refusedWhileImpersonating {
		name := strings.ReplaceAll(strings.TrimPrefix(m, "/"), "/", ".")
		if _, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name)); err != nil {
			t.Errorf("%s: %v", m, err)
		}
	}
}

// TestImpersonationRules: the table refuses its methods to an
// impersonating principal only.
func TestImpersonationRules(t *testing.T) {
	as := func(imp string) context.Context {
		return NewIncomingContext(context.Background(), Principal{TenantID: "t", UserID: "u", SessionID: "s", Impersonator: "op", Impersonation: imp})
	}
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		method  string
		refused bool
	}{
		{"refund impersonating", as("i1"), "/almoner.orders.v1.OrderService/CreateOrderRefund", true},
		{"import impersonating", as("i1"), "/almoner.imports.v1.ImportService/UploadImport", true},
		{"key impersonating", as("i1"), "/almoner.auth.v1.ApiKeyService/CreateApiKey", true},
		{"grant impersonating", as("i1"), "/almoner.auth.v1.SupportAccessService/DeleteSupportAccess", true},
		{"contact impersonating", as("i1"), "/almoner.contacts.v1.ContactService/CreateContact", false},
		{"gift impersonating", as("i1"), "/almoner.orders.v1.OrderService/CreateOrder", false},
		{"refund as the user", as(""), "/almoner.orders.v1.OrderService/CreateOrderRefund", false},
		{"refund by the platform", context.Background(), "/almoner.orders.v1.OrderService/CreateOrderRefund", false},
	} {
		err := checkImpersonation(tc.ctx, tc.method)
		if got := err != nil; got != tc.refused {
			t.Errorf("%s: refused %v, want %v", tc.name, got, tc.refused)
		}
		if err != nil {
			if st := status.Convert(err); st.Code() != codes.PermissionDenied || st.Message() != RefusedDuringImpersonation {
				t.Errorf("%s: %v", tc.name, st)
			}
		}
	}
	if ImpersonatorActor := (Principal{Impersonator: "op"}).ImpersonatorActor(); ImpersonatorActor != "operator:op" {
		t.Error(ImpersonatorActor)
	}
}
