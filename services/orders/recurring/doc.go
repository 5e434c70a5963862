// Package recurring is the orders service's recurring gifts: schedules
// made by orders, their lifecycle (amend, pause, resume, skip, cancel),
// each tenant's retry days, and the runner that charges due installments
// with no transaction open while the processor is called
// (docs/orders.md, "Recurring").
package recurring
