-- The floor of a cash item order (issue 38): the statements one POST
-- /orders of one item line (make bench's create-order-item: one untracked
-- item, quantity 1, paid in cash) makes, as the server's statement log
-- shows them (log_min_duration_statement = 0, one order after a warm-up),
-- replayed by pgbench with the same clients and the same round trips:
--   1. the contact check, a round trip of its own;
--   2. the inventory reservation's transaction, pipelined in two round
--      trips as db.PipelinedTx sends it: BEGIN, the commit setting and the
--      order's advisory lock, the order's existing reservations and the
--      items (the tracked ones row-locked), then the reservation's insert
--      and COMMIT (this transaction commits without waiting for its WAL
--      flush; the order's commit after it does wait);
--   3. the order, its item line, its payment and its two audit rows (Order,
--      OrderPayment: an untracked item moves no stock and has no audit row
--      of its own) pipelined in one implicit transaction.
-- Left out: the order-number counter's refill (one per block, a block
-- lasting about a second at the process's rate, not per order), the key
-- cache's epoch read, and the gRPC hop from orders to inventory (no SQL).
-- The ids are random instead of UUIDv7 (time-ordered), which if anything
-- makes the floor's index inserts dearer; colons inside literals are
-- chr(58), or pgbench would take them for variables. Run by
-- bench-writes.sh as
--   pgbench -n -M prepared -f this -D tid=… -D item=… -D contact_lo=… -D contact_hi=… -D batch=…
\set n random(1, 140737488355327)
-- Each transaction names a contact drawn from contact_lo..contact_hi: the
-- contacts bench-writes.sh spreads orders over, or the hot donor alone.
\set contact random(:contact_lo, :contact_hi)
SELECT true, coalesce(s.is_active, c.is_active), c.merged_into IS NOT NULL FROM contacts.contacts c LEFT JOIN contacts.contacts s ON s.tenant_id = c.tenant_id AND s.id = c.merged_into WHERE c.tenant_id = :tid AND c.id = :contact;
\startpipeline
BEGIN;
SELECT set_config('synchronous_commit', 'off', true), pg_advisory_xact_lock(hashtextextended('inventory.reservations' || chr(58) || :tid || chr(58) || '00000000-0000-7000-8000-' || lpad(to_hex(:n::bigint), 12, '0'), 0));
SELECT tenant_id, order_id, line_number, item_id, quantity, state, stock_moved, sku, name, unit_price_minor, fair_market_value_minor, currency, reserved_at, released_at FROM inventory.reservations WHERE tenant_id = :tid AND order_id = ('00000000-0000-7000-8000-' || lpad(to_hex(:n::bigint), 12, '0'))::uuid AND line_number = ANY('{1}'::integer[]);
WITH locked AS (SELECT tenant_id, id, sku, name, description, price_minor, currency, fair_market_value_minor, track_stock, stock_on_hand, active, category, created_at, updated_at, location FROM inventory.items WHERE tenant_id = :tid AND id = ANY(ARRAY[:item::uuid]) AND track_stock ORDER BY id FOR UPDATE) SELECT tenant_id, id, sku, name, description, price_minor, currency, fair_market_value_minor, track_stock, stock_on_hand, active, category, created_at, updated_at, location, true FROM locked UNION ALL SELECT tenant_id, id, sku, name, description, price_minor, currency, fair_market_value_minor, track_stock, stock_on_hand, active, category, created_at, updated_at, location, false FROM inventory.items WHERE tenant_id = :tid AND id = ANY(ARRAY[:item::uuid]) AND id NOT IN (SELECT id FROM locked);
\endpipeline
\startpipeline
INSERT INTO inventory.reservations (tenant_id, order_id, line_number, item_id, quantity, state, stock_moved, sku, name, unit_price_minor, fair_market_value_minor, currency) VALUES (:tid, ('00000000-0000-7000-8000-' || lpad(to_hex(:n::bigint), 12, '0'))::uuid, 1, :item, 1, 'reserved', false, 'BENCH-1', 'Bench tote', 2500, 2500, 'USD') RETURNING reserved_at;
COMMIT;
\endpipeline
\startpipeline
INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency, donation_subtotal_minor, item_subtotal_minor, total_minor, deductible_minor, has_donations, has_items, batch_id, schedule_id, schedule_ids, billing_address, shipping_address, notes, created_at, updated_at) VALUES (:tid, ('00000000-0000-7000-8000-' || lpad(to_hex(:n::bigint), 12, '0'))::uuid, 1000000000 + :n::bigint, (SELECT CASE WHEN NOT false OR w.id = :contact THEN w.id END FROM (SELECT orders.contact_for_write(:tid, :contact) AS id) w), 'Completed', 'USD', 0, 2500, 2500, 0, false, true, (SELECT id FROM orders.batches WHERE tenant_id = :tid AND id = :batch AND state = 'Open' FOR KEY SHARE), NULL, '{}', NULL, NULL, '', now(), now()) RETURNING contact_id;
INSERT INTO orders.order_items (tenant_id, order_id, line_number, item_id, sku, name, quantity, unit_price_minor, fair_market_value_minor) VALUES (:tid, ('00000000-0000-7000-8000-' || lpad(to_hex(:n::bigint), 12, '0'))::uuid, 1, :item, 'BENCH-1', 'Bench tote', 1, 2500, 2500);
INSERT INTO orders.order_payments (tenant_id, order_id, id, position, method, amount_minor, status, check_number, reference, processor_reference, processor) VALUES (:tid, ('00000000-0000-7000-8000-' || lpad(to_hex(:n::bigint), 12, '0'))::uuid, ('00000000-0000-7000-a000-' || lpad(to_hex(:n::bigint), 12, '0'))::uuid, 0, 'Cash', 2500, 'Captured', '', '', '', '');
INSERT INTO audit.events (tenant_id, event_id, entity_type, entity_id, action, event, changes, actor, trace_parent, impersonator) SELECT :tid::uuid, u.event_id, u.entity_type, u.entity_id, u.action, u.event, u.changes::jsonb, 'api-key' || chr(58) || 'ak_test_floor', '00-67d6dd17dd70582b82eb2bb333a141af-ecaf397f40929a30-00', NULL FROM unnest(ARRAY[gen_random_uuid(), gen_random_uuid()], '{Order,OrderPayment}'::text[], ARRAY['00000000-0000-7000-8000-' || lpad(to_hex(:n::bigint), 12, '0'), '00000000-0000-7000-a000-' || lpad(to_hex(:n::bigint), 12, '0')], '{Created,Created}'::text[], '{order.created,order_payment.created}'::text[], '{NULL,NULL}'::text[]) WITH ORDINALITY AS u(event_id, entity_type, entity_id, action, event, changes, ord) ORDER BY u.ord;
\endpipeline
