package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/wirejson"
)

// admin runs an operator command against the auth service's internal admin
// RPCs and prints one JSON object on stdout.
func admin(args []string, stdout io.Writer) error {
	if len(args) < 2 {
		return usageError{"usage: almoner admin tenant create|feature|activate|deactivate|get … | admin tenant processor set|get|clear … | admin tenant recurring-retries … | admin key create … | admin user invite … | admin operator invite|deactivate …"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out proto.Message
	var err error
	switch args[0] + " " + args[1] {
	case "tenant create":
		out, err = tenantCreate(ctx, args[2:])
	case "tenant feature":
		out, err = tenantFeature(ctx, args[2:])
	case "tenant activate":
		out, err = tenantSetActive(ctx, args[2:], true)
	case "tenant deactivate":
		out, err = tenantSetActive(ctx, args[2:], false)
	case "tenant get":
		out, err = tenantGet(ctx, args[2:])
	case "tenant processor":
		out, err = tenantProcessor(ctx, args[2:])
	case "tenant recurring-retries":
		out, err = tenantRecurringRetries(ctx, args[2:])
	case "key create":
		out, err = keyCreate(ctx, args[2:])
	case "user invite":
		out, err = userInvite(ctx, args[2:])
	case "operator invite":
		out, err = operatorInvite(ctx, args[2:])
	case "operator deactivate":
		out, err = operatorDeactivate(ctx, args[2:])
	default:
		return usageError{fmt.Sprintf("unknown admin command %q", strings.Join(args[:2], " "))}
	}
	if err != nil {
		return describe(err)
	}
	b, err := wirejson.Marshal(out)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}

// describe turns an RPC error into a one-line message for the operator.
func describe(err error) error {
	var ue usageError
	if errors.As(err, &ue) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	msg := st.Message()
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, fv := range br.GetFieldViolations() {
				msg += fmt.Sprintf(" %s: %s", fv.GetField(), fv.GetDescription())
			}
		}
	}
	return fmt.Errorf("%s: %s", strings.ToLower(strings.ReplaceAll(st.Code().String(), "_", " ")), msg)
}

// authTarget is the auth service address an admin command dials and where
// that address came from, which the message for an address where nothing
// answers names, with what to set instead.
type authTarget struct {
	addr   string
	source string
	// runFile is the data folder's run file, when source is one.
	runFile string
}

// defaultAuthAddr is make run's and almoner serve's gRPC address.
const defaultAuthAddr = "127.0.0.1:9090"

// runFileName is the file in the data folder where scripts/run.sh records
// the addresses of the server it started (and removes it when it stops),
// so that admin commands in a fresh shell find that server.
const runFileName = "run.json"

// resolveAuthTarget picks the auth service's address, first of:
// ALMONER_AUTH_ADDR (a split deployment's auth service), ALMONER_GRPC_ADDR
// (the one-process server's address), the gRPC address make run recorded
// in its data folder (ALMONER_DATA_DIR, else .data), 127.0.0.1:9090.
// --auth-addr overrides all of them.
func resolveAuthTarget(env config.Source) authTarget {
	for _, v := range []string{config.ServiceAddrVar("auth"), "ALMONER_GRPC_ADDR"} {
		if addr := env.String(v, ""); addr != "" {
			return authTarget{addr: dialable(addr), source: v}
		}
	}
	file := filepath.Join(env.String("ALMONER_DATA_DIR", ".data"), runFileName)
	if b, err := os.ReadFile(file); err == nil { //nolint:gosec // G304: the operator's data dir
		var run struct {
			GRPCAddr string `json:"grpcAddr"`
		}
		if json.Unmarshal(b, &run) == nil && run.GRPCAddr != "" {
			return authTarget{addr: dialable(run.GRPCAddr), source: file, runFile: file}
		}
	}
	return authTarget{addr: defaultAuthAddr, source: "default", runFile: file}
}

// dialable turns a listen address into one to dial: a listener on every
// interface (":9090", "0.0.0.0:9090", "[::]:9090") is reached on loopback.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	switch host {
	case "", "0.0.0.0":
		return net.JoinHostPort("127.0.0.1", port)
	case "::":
		return net.JoinHostPort("::1", port)
	}
	return addr
}

// unreachableError is an admin command's failure to reach the auth
// service: it names the address, where it came from and what to set.
type unreachableError struct {
	target authTarget
	cause  string
}

func (e unreachableError) Error() string {
	t := e.target
	var where, fix string
	switch {
	case t.source == "--auth-addr":
		where = "given with --auth-addr"
		fix = "Check that the server is running and that this is its gRPC address."
	case t.runFile != "" && t.source == t.runFile:
		where = "recorded in " + t.runFile + " by make run"
		fix = "That make run has stopped: start it again, or set ALMONER_AUTH_ADDR (or --auth-addr) to the gRPC address of the server you mean."
	case t.source == "default":
		where = "the default: ALMONER_AUTH_ADDR and ALMONER_GRPC_ADDR are unset and there is no " + t.runFile
		fix = "Start the server with make run, which records its address in " + t.runFile + "; if make run was given ALMONER_DATA_DIR, set the same ALMONER_DATA_DIR here; otherwise set ALMONER_AUTH_ADDR (or --auth-addr) to the server's gRPC address (its ALMONER_GRPC_ADDR)."
	default:
		where = "from " + t.source
		fix = "Check that the server is running and that " + t.source + " is its gRPC address (ALMONER_AUTH_ADDR, when set, wins over ALMONER_GRPC_ADDR; --auth-addr over both)."
	}
	return fmt.Sprintf("unavailable: no auth service answers at %s (%s): %s. %s", t.addr, where, e.cause, fix)
}

// reachability turns an RPC that failed because nothing answered at the
// target into an unreachableError. An UNAVAILABLE that the auth service
// itself returned (its database is down) comes over a ready connection and
// is left as it is.
func reachability(t authTarget) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if st, ok := status.FromError(err); ok && st.Code() == codes.Unavailable && cc.GetState() != connectivity.Ready {
			return unreachableError{target: t, cause: st.Message()}
		}
		return err
	}
}

func newFlags(name string) (*flag.FlagSet, *authTarget) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	t := resolveAuthTarget(config.Env)
	fs.Func("auth-addr", "auth service gRPC address (default: ALMONER_AUTH_ADDR, ALMONER_GRPC_ADDR, make run's data folder, "+defaultAuthAddr+")",
		func(v string) error {
			t = authTarget{addr: v, source: "--auth-addr"}
			return nil
		})
	return fs, &t
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return usageError{fs.Name() + ": " + err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))}
	}
	return nil
}

// internalKeyFileName is the file in the data folder where
// scripts/internal-key.sh keeps make run's internal key, where admin
// commands in a fresh shell find it.
const internalKeyFileName = "internal-key"

// signingKey is the internal key admin commands sign their calls with and
// where it came from, which the message for a refused call names.
type signingKey struct {
	key    *authctx.Key
	source string
}

// resolveInternalKey reads the deployment's internal key: ALMONER_INTERNAL_KEY
// (a deployment's operators, a pod's environment), else the key file make
// run keeps in its data folder (ALMONER_DATA_DIR, else .data).
func resolveInternalKey(env config.Source) (signingKey, error) {
	if v := env.String(authctx.KeyVar, ""); v != "" {
		k, err := authctx.ParseKey(v)
		return signingKey{k, authctx.KeyVar}, err
	}
	file := filepath.Join(env.String("ALMONER_DATA_DIR", ".data"), internalKeyFileName)
	b, err := os.ReadFile(file) //nolint:gosec // G304: the operator's data dir
	if errors.Is(err, os.ErrNotExist) {
		return signingKey{}, fmt.Errorf("%s is not set and there is no %s: admin commands sign their calls with the deployment's "+
			"internal key. Set %s to the key the server was given; make run keeps its key in %s (if make run was given "+
			"ALMONER_DATA_DIR, set the same ALMONER_DATA_DIR here)", authctx.KeyVar, file, authctx.KeyVar, file)
	}
	if err != nil {
		return signingKey{}, fmt.Errorf("read the internal key: %w", err)
	}
	k, err := authctx.ParseKey(string(b))
	if err != nil {
		return signingKey{}, fmt.Errorf("%s: %w", file, err)
	}
	return signingKey{k, file}, nil
}

// refusedSignature turns the auth service's Unauthenticated, which it
// answers only to a call whose signature does not verify, into a message
// naming the key used and what to set.
func refusedSignature(t authTarget, k signingKey) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if status.Code(err) == codes.Unauthenticated {
			return fmt.Errorf("unauthenticated: the auth service at %s refused this command's signature: the internal key from %s is not "+
				"the one the server was started with; set %s to the server's key", t.addr, k.source, authctx.KeyVar)
		}
		return err
	}
}

func adminClient(t authTarget) (authv1.TenantAdminServiceClient, func(), error) {
	conn, err := adminConn(t, "auth")
	if err != nil {
		return nil, nil, err
	}
	return authv1.NewTenantAdminServiceClient(conn), func() { _ = conn.Close() }, nil
}

// adminConn dials a service's internal API at t, signing every call with
// the deployment's internal key.
func adminConn(t authTarget, service string) (*grpc.ClientConn, error) {
	k, err := resolveInternalKey(config.Env)
	if err != nil {
		// A server that is not running is the more basic problem, and the
		// health check needs no key: say that first when it is so.
		if uerr := unreachable(t); uerr != nil {
			return nil, uerr
		}
		return nil, err
	}
	// Outermost first: the messages see the call as signed and sent.
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(reachability(t), refusedSignature(t, k))}, k.key.DialOptions()...)
	conn, err := grpc.NewClient(t.addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s service at %s: %w", service, t.addr, err)
	}
	return conn, nil
}

// unreachable returns the unreachableError of an auth target where no
// server answers a health check, else nil.
func unreachable(t authTarget) error {
	conn, err := grpc.NewClient(t.addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(reachability(t)))
	if err != nil {
		return nil
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	var ue unreachableError
	if errors.As(err, &ue) {
		return ue
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func tenantCreate(ctx context.Context, args []string) (proto.Message, error) {
	fs, addr := newFlags("tenant create")
	name := fs.String("name", "", "tenant name (required)")
	slug := fs.String("slug", "", "unique slug (default: from the name)")
	feats := fs.String("features", "api-access:enabled", "comma-separated feature flags to enable")
	currency := fs.String("currency", "USD", "default ISO 4217 currency")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if *name == "" {
		return nil, usageError{"tenant create: --name is required"}
	}
	c, done, err := adminClient(*addr)
	if err != nil {
		return nil, err
	}
	defer done()
	resp, err := c.CreateTenant(ctx, &authv1.CreateTenantRequest{Name: *name, Slug: *slug, Features: splitList(*feats), DefaultCurrency: *currency})
	if err != nil {
		return nil, err
	}
	return resp.GetTenant(), nil
}

func tenantGet(ctx context.Context, args []string) (proto.Message, error) {
	fs, addr := newFlags("tenant get")
	tenant := fs.String("tenant", "", "tenant id (required)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if *tenant == "" {
		return nil, usageError{"tenant get: --tenant is required"}
	}
	c, done, err := adminClient(*addr)
	if err != nil {
		return nil, err
	}
	defer done()
	resp, err := c.GetTenant(ctx, &authv1.GetTenantRequest{TenantId: *tenant})
	if err != nil {
		return nil, err
	}
	return resp.GetTenant(), nil
}

func tenantFeature(ctx context.Context, args []string) (proto.Message, error) {
	fs, addr := newFlags("tenant feature")
	tenant := fs.String("tenant", "", "tenant id (required)")
	set := fs.String("set", "", "NAME=true|false (required)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	name, value, ok := strings.Cut(*set, "=")
	if *tenant == "" || !ok || (value != "true" && value != "false") {
		return nil, usageError{"tenant feature: --tenant ID and --set NAME=true|false are required"}
	}
	c, done, err := adminClient(*addr)
	if err != nil {
		return nil, err
	}
	defer done()
	resp, err := c.SetTenantFeature(ctx, &authv1.SetTenantFeatureRequest{TenantId: *tenant, Feature: name, Enabled: value == "true"})
	if err != nil {
		return nil, err
	}
	return resp.GetTenant(), nil
}

func tenantSetActive(ctx context.Context, args []string, active bool) (proto.Message, error) {
	verb := "deactivate"
	if active {
		verb = "activate"
	}
	fs, addr := newFlags("tenant " + verb)
	tenant := fs.String("tenant", "", "tenant id (required)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if *tenant == "" {
		return nil, usageError{"tenant " + verb + ": --tenant is required"}
	}
	c, done, err := adminClient(*addr)
	if err != nil {
		return nil, err
	}
	defer done()
	resp, err := c.SetTenantActive(ctx, &authv1.SetTenantActiveRequest{TenantId: *tenant, Active: active})
	if err != nil {
		return nil, err
	}
	return resp.GetTenant(), nil
}

func keyCreate(ctx context.Context, args []string) (proto.Message, error) {
	fs, addr := newFlags("key create")
	tenant := fs.String("tenant", "", "tenant id (required)")
	name := fs.String("name", "", "key name (required)")
	scopeList := fs.String("scopes", "", "comma-separated scopes, or all (required)")
	expires := fs.String("expires-at", "", "RFC 3339 expiry (optional)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if *tenant == "" || *name == "" || *scopeList == "" {
		return nil, usageError{"key create: --tenant, --name and --scopes are required"}
	}
	req := &authv1.CreateKeyRequest{TenantId: *tenant, Name: *name, Scopes: splitList(*scopeList)}
	if *expires != "" {
		t, err := time.Parse(time.RFC3339, *expires)
		if err != nil {
			return nil, usageError{"key create: --expires-at must be an RFC 3339 time such as 2027-01-31T00:00:00Z"}
		}
		req.ExpiresAt = timestamppb.New(t)
	}
	c, done, err := adminClient(*addr)
	if err != nil {
		return nil, err
	}
	defer done()
	resp, err := c.CreateKey(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.GetApiKey(), nil
}

// userInvite runs `admin user invite`: it prints {userId, invitationToken}.
func userInvite(ctx context.Context, args []string) (proto.Message, error) {
	fs, addr := newFlags("user invite")
	tenant := fs.String("tenant", "", "tenant id (required)")
	email := fs.String("email", "", "the person's email (required)")
	role := fs.String("role", "owner", "owner, admin, fundraiser, finance or viewer")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if *tenant == "" || *email == "" {
		return nil, usageError{"user invite: --tenant and --email are required"}
	}
	c, done, err := adminClient(*addr)
	if err != nil {
		return nil, err
	}
	defer done()
	return c.InviteUser(ctx, &authv1.InviteUserRequest{TenantId: *tenant, Email: *email, Role: *role})
}

// operatorInvite runs `admin operator invite`: it invites a platform
// operator (no tenant) and prints {userId, invitationToken}.
func operatorInvite(ctx context.Context, args []string) (proto.Message, error) {
	fs, addr := newFlags("operator invite")
	email := fs.String("email", "", "the person's email (required)")
	role := fs.String("role", "", "support or platform-admin (required)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if *email == "" || *role == "" {
		return nil, usageError{"operator invite: --email and --role are required"}
	}
	c, done, err := adminClient(*addr)
	if err != nil {
		return nil, err
	}
	defer done()
	return c.InviteOperator(ctx, &authv1.InviteOperatorRequest{Email: *email, Role: *role})
}

// operatorDeactivate runs `admin operator deactivate --email E`: the
// platform role goes, every session and impersonation of the operator
// ends. It prints {userId}.
func operatorDeactivate(ctx context.Context, args []string) (proto.Message, error) {
	fs, addr := newFlags("operator deactivate")
	email := fs.String("email", "", "the operator's email (required)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if *email == "" {
		return nil, usageError{"operator deactivate: --email is required"}
	}
	c, done, err := adminClient(*addr)
	if err != nil {
		return nil, err
	}
	defer done()
	return c.DeactivateOperator(ctx, &authv1.DeactivateOperatorRequest{Email: *email})
}

// Processor keys may come from these variables instead of flags, which
// other users of the machine can read in the process list.
const (
	processorSecretKeyVar     = "ALMONER_PROCESSOR_SECRET_KEY"
	processorWebhookSecretVar = "ALMONER_PROCESSOR_WEBHOOK_SECRET"
)

// tenantProcessor runs `admin tenant processor set|get|clear`. Each prints
// the tenant's processor without its keys: the auth service never returns
// them to an operator.
func tenantProcessor(ctx context.Context, args []string) (proto.Message, error) {
	const use = "usage: almoner admin tenant processor set --tenant ID [--provider stripe] --secret-key sk_… --webhook-secret whsec_… | get --tenant ID | clear --tenant ID"
	if len(args) == 0 {
		return nil, usageError{use}
	}
	verb := args[0]
	if verb != "set" && verb != "get" && verb != "clear" {
		return nil, usageError{fmt.Sprintf("unknown command %q; %s", "tenant processor "+verb, use)}
	}
	fs, addr := newFlags("tenant processor " + verb)
	tenant := fs.String("tenant", "", "tenant id (required)")
	var provider, secretKey, webhookSecret *string
	if verb == "set" {
		provider = fs.String("provider", "stripe", "payment processor")
		secretKey = fs.String("secret-key", "", "the account's secret or restricted key (or "+processorSecretKeyVar+")")
		webhookSecret = fs.String("webhook-secret", "", "the notification endpoint's signing secret (or "+processorWebhookSecretVar+")")
	}
	if err := parse(fs, args[1:]); err != nil {
		return nil, err
	}
	if *tenant == "" {
		return nil, usageError{"tenant processor " + verb + ": --tenant is required"}
	}
	if verb == "set" {
		if *secretKey == "" {
			*secretKey = os.Getenv(processorSecretKeyVar)
		}
		if *webhookSecret == "" {
			*webhookSecret = os.Getenv(processorWebhookSecretVar)
		}
		if *secretKey == "" || *webhookSecret == "" {
			return nil, usageError{"tenant processor set: --secret-key and --webhook-secret are required (or " + processorSecretKeyVar + " and " + processorWebhookSecretVar + ")"}
		}
	}
	c, done, err := adminClient(*addr)
	if err != nil {
		return nil, err
	}
	defer done()
	switch verb {
	case "set":
		resp, err := c.SetTenantProcessor(ctx, &authv1.SetTenantProcessorRequest{TenantId: *tenant, Provider: *provider, SecretKey: *secretKey, WebhookSecret: *webhookSecret})
		return resp.GetProcessor(), err
	case "get":
		resp, err := c.GetTenantProcessor(ctx, &authv1.GetTenantProcessorRequest{TenantId: *tenant})
		return resp.GetProcessor(), err
	default:
		resp, err := c.ClearTenantProcessor(ctx, &authv1.ClearTenantProcessorRequest{TenantId: *tenant})
		return resp.GetProcessor(), err
	}
}
