// Package transport holds the gRPC transport settings of the hops between
// Almoner's processes, client and server side, in one place.
package transport

import "google.golang.org/grpc"

// The flow-control windows of the internal hops. A static window turns
// off gRPC's bandwidth-delay estimation, which otherwise answers a
// connection's incoming data with a PING and a window update, and the
// peer with a PING ack: three more frames, and often more writes on both
// sides, for calls whose messages are a few hundred bytes. The windows are
// those the estimator grows to on a fast link, so a large message (a
// report export, an import batch) still streams without waiting for
// updates; they bound what a peer may send unread, they are not
// allocated.
const (
	streamWindow = 1 << 20 // 1 MiB
	connWindow   = 4 << 20 // 4 MiB
)

// DialOptions are the transport settings of every connection
// between Almoner's processes (a host's clients, the gateway's upstreams):
// static windows. (Write buffers are shared by default in grpc-go 1.85;
// the options that asked for them are deprecated.)
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithStaticStreamWindowSize(streamWindow),
		grpc.WithStaticConnWindowSize(connWindow),
	}
}

// ServerOptions are DialOptions' server side, for every gRPC server a
// host runs.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.StaticStreamWindowSize(streamWindow),
		grpc.StaticConnWindowSize(connWindow),
	}
}
