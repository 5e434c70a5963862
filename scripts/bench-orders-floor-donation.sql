-- The floor of a cash donation order (issue 38): the statements one
-- POST /orders of a donation makes, as the server's statement log shows
-- them (log_min_duration_statement = 0, one order of scripts/bench-writes.sh),
-- replayed by pgbench with the same clients: the fund read and the
-- contact check (each a round trip of its own), then the order, its
-- donation line, its payment and its three audit rows pipelined in one
-- implicit transaction. Left out: the order-number counter's refill (one
-- per block, not per order) and the key cache's epoch read. The ids are
-- random instead of UUIDv7 (time-ordered), which if anything makes the
-- floor's index inserts dearer; the actor's colon is chr(58), or pgbench
-- would take it for a variable. Run by bench-writes.sh as
--   pgbench -n -M prepared -f this -D tid=… -D fund=… -D contact_lo=… -D contact_hi=… -D batch=…
\set n random(1, 140737488355327)
-- Each transaction names a contact drawn from contact_lo..contact_hi: the
-- contacts bench-writes.sh spreads orders over, or the hot donor alone.
\set contact random(:contact_lo, :contact_hi)
SELECT tenant_id, id, name, description, is_tax_deductible, processing_fee_bp, is_active, created_at, updated_at FROM orders.funds WHERE tenant_id = :tid AND id = ANY(ARRAY[:fund::uuid]);
SELECT true, coalesce(s.is_active, c.is_active), c.merged_into IS NOT NULL FROM contacts.contacts c LEFT JOIN contacts.contacts s ON s.tenant_id = c.tenant_id AND s.id = c.merged_into WHERE c.tenant_id = :tid AND c.id = :contact;
\startpipeline
INSERT INTO orders.orders (tenant_id, id, order_number, contact_id, status, currency, donation_subtotal_minor, item_subtotal_minor, total_minor, deductible_minor, has_donations, has_items, batch_id, schedule_id, schedule_ids, billing_address, shipping_address, notes, created_at, updated_at) VALUES (:tid, ('00000000-0000-7000-8000-' || lpad(to_hex(:n::bigint), 12, '0'))::uuid, 1000000000 + :n::bigint, (SELECT CASE WHEN NOT false OR w.id = :contact THEN w.id END FROM (SELECT orders.contact_for_write(:tid, :contact) AS id) w), 'Completed', 'USD', 2500, 0, 2500, 2500, true, false, (SELECT id FROM orders.batches WHERE tenant_id = :tid AND id = :batch AND state = 'Open' FOR KEY SHARE), NULL, '{}', NULL, NULL, '', now(), now()) RETURNING contact_id;
INSERT INTO orders.order_donations (tenant_id, order_id, id, position, fund_id, fund_name, amount_minor, is_tax_deductible, campaign_id, appeal_id, tribute) VALUES (:tid, ('00000000-0000-7000-8000-' || lpad(to_hex(:n::bigint), 12, '0'))::uuid, ('00000000-0000-7000-9000-' || lpad(to_hex(:n::bigint), 12, '0'))::uuid, 0, :fund, 'General', 2500, true, '', '', NULL);
INSERT INTO orders.order_payments (tenant_id, order_id, id, position, method, amount_minor, status, check_number, reference, processor_reference, processor) VALUES (:tid, ('00000000-0000-7000-8000-' || lpad(to_hex(:n::bigint), 12, '0'))::uuid, ('00000000-0000-7000-a000-' || lpad(to_hex(:n::bigint), 12, '0'))::uuid, 0, 'Cash', 2500, 'Captured', '', '', '', '');
INSERT INTO audit.events (tenant_id, event_id, entity_type, entity_id, action, event, changes, actor, trace_parent, impersonator) SELECT :tid::uuid, u.event_id, u.entity_type, u.entity_id, u.action, u.event, u.changes::jsonb, 'api-key' || chr(58) || 'ak_test_floor', '00-67d6dd17dd70582b82eb2bb333a141af-ecaf397f40929a30-00', NULL FROM unnest(ARRAY[gen_random_uuid(), gen_random_uuid(), gen_random_uuid()], '{Order,OrderDonation,OrderPayment}'::text[], ARRAY['00000000-0000-7000-8000-' || lpad(to_hex(:n::bigint), 12, '0'), '00000000-0000-7000-9000-' || lpad(to_hex(:n::bigint), 12, '0'), '00000000-0000-7000-a000-' || lpad(to_hex(:n::bigint), 12, '0')], '{Created,Created,Created}'::text[], '{order.created,order_donation.created,order_payment.created}'::text[], '{NULL,NULL,NULL}'::text[]) WITH ORDINALITY AS u(event_id, entity_type, entity_id, action, event, changes, ord) ORDER BY u.ord;
\endpipeline
