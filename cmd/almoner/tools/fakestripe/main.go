// Command fakestripe serves the test suite's stateful fake Stripe
// (stripefake) on a loopback port for `make bench`, which measures a card
// order against it beside a cash order. It prints the API base URL, then
// serves until it is interrupted. It is a benchmark tool: no shipped
// binary links the fake.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/almoner/almoner/services/orders/processor/stripeproc/stripefake"
)

func main() {
	s := stripefake.New()
	defer s.Close()
	fmt.Println(s.URL)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
}
