// Package reference serves the orders service's reference data: the
// funds gifts go to and the batches orders are grouped in for deposit
// (docs/orders.md).
package reference
