# Sourced by the benchmark scripts (bench.sh, bench-writes.sh,
# profile-orders.sh).
#
# spread_contacts DATABASE_URL TENANT_ID N prints "LO HI": N contacts made
# with one set-based INSERT, their ids LO..HI reserved from the tenant's
# contact counter (contacts.counters, pkg/counter) as the server reserves a
# block, so they are contiguous and never handed out again. Orders that
# name one of them drawn per request (loadgen's {{random:LO:HI}}, pgbench's
# random(LO, HI)) measure the order path, not one contact's giving-summary
# lock, which every gift of a contact takes at commit.
spread_contacts() {
  local url=$1 tid=$2 n=$3 lo hi
  IFS='|' read -r lo hi < <(psql "$url" -Atqc "
    WITH c AS (
      INSERT INTO contacts.counters AS c (tenant_id, name, last_value) VALUES ('$tid', 'contact', $n)
      ON CONFLICT (tenant_id, name) DO UPDATE SET last_value = c.last_value + excluded.last_value
      RETURNING last_value),
    ins AS (
      INSERT INTO contacts.contacts (tenant_id, id, contact_type, first_name, last_name, name_key, search_text)
      SELECT '$tid', c.last_value - $n + g, 'Individual', 'Spread', 'Giver ' || g, 'spread giver ' || g, 'spread giver ' || g
      FROM c, generate_series(1, $n) g
      RETURNING id)
    SELECT min(id), max(id) FROM ins")
  if [ -z "$lo" ] || [ $((hi - lo + 1)) != "$n" ]; then
    echo "spread_contacts: made contacts '$lo'..'$hi', want $n" >&2
    return 1
  fi
  echo "$lo $hi"
}
