package service

import (
	"sync"

	"google.golang.org/grpc"

	"github.com/almoner/almoner/pkg/apperr"
)

// Upstream is the connection to another service, dialled through
// Deps.Dial on first use and kept: a service that calls another starts
// where the other is not running, and a call that needs it answers 503.
type Upstream struct {
	name string
	dial func(string) (grpc.ClientConnInterface, error)

	once sync.Once
	conn grpc.ClientConnInterface
	err  error
}

// NewUpstream returns the upstream service name, reached through dial
// (nil: not configured).
func NewUpstream(dial func(string) (grpc.ClientConnInterface, error), name string) *Upstream {
	return &Upstream{name: name, dial: dial}
}

// Conn returns the connection, dialled once; a failure is an Unavailable
// error naming the service, and stays the answer.
func (u *Upstream) Conn() (grpc.ClientConnInterface, error) {
	u.once.Do(func() {
		if u.dial == nil {
			u.err = apperr.Unavailable("The "+u.name+" service is not configured.", nil)
			return
		}
		conn, err := u.dial(u.name)
		if err != nil {
			u.err = apperr.Unavailable("The "+u.name+" service is not reachable.", err)
			return
		}
		u.conn = conn
	})
	return u.conn, u.err
}
