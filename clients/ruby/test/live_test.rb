# frozen_string_literal: true

require_relative "test_helper"
require "open3"
require "securerandom"

# Against the real server of clients/harness.sh; skipped when MAILBOLT_BASE_URL is unset.
class LiveTest < Minitest::Test
  include MailboltTest::Live

  def test_send_and_get
    sent = sandbox.messages.send(**test_message(metadata: { "order" => "42" }))
    assert_equal 202, sent.status
    assert_equal "queued", sent["status"]
    assert sent.request_id
    assert_kind_of Integer, sent.rate_limit.limit
    assert_kind_of Integer, sent.rate_limit.remaining
    assert_kind_of Integer, sent.rate_limit.reset
    got = sandbox.messages.get(sent["id"])
    assert_equal sent["id"], got["id"]
    assert_equal "test", got["mode"]
    assert_equal({ "order" => "42" }, got["metadata"])
  end

  def test_batch
    res = sandbox.messages.send_batch([test_message(to: ["one@example.net"]), test_message(to: ["two@example.net"])])
    assert_equal 202, res.status
    assert_equal 2, res["data"].size
    res["data"].each { |m| assert_equal "queued", m["status"] }
  end

  def test_cancel_scheduled_message
    sent = sandbox.messages.send(**test_message(send_at: (Time.now + 3600).utc.iso8601))
    assert_equal "scheduled", sent["status"]
    cancelled = sandbox.messages.cancel(sent["id"])
    assert_equal "cancelled", cancelled["status"]
    err = assert_raises(Mailbolt::GoneError) { sandbox.messages.get(sent["id"]) }
    assert_equal "GONE", err.code
  end

  def test_messages_walked_to_the_end_in_both_modes
    campaign = "walk-#{unique}"
    ids = sandbox.messages.send_batch(Array.new(5) { |i| test_message(to: ["m#{i}@example.net"], campaign_id: campaign) })["data"].map { |m| m["id"] }
    %i[cursor page].each do |mode|
      pages = sandbox.messages.pages(mode: mode, limit: 2, campaign_id: campaign).to_a
      assert_equal 3, pages.size, mode
      assert_equal ids.sort, pages.flat_map { |p| p.map { |m| m["id"] } }.sort, mode
    end
    first = sandbox.messages.list(limit: 2, campaign_id: campaign)
    assert first.has_more?
    assert first.cursor
    paged = sandbox.messages.list(limit: 2, page: 3, campaign_id: campaign)
    assert_equal 5, paged.total
    assert_nil paged.links["next"]
    assert_equal ids.sort, sandbox.messages.each_item(limit: 2, campaign_id: campaign).map { |m| m["id"] }.sort
  end

  def test_suppressions_walked_to_the_end_in_both_modes
    tag = unique
    want = Array.new(5) { |i| "s#{i}-#{tag}@example.org" }
    want.each { |r| live.suppressions.add(recipient: r, reason: "manual") }
    %i[cursor page].each do |mode|
      pages = live.suppressions.pages(mode: mode, limit: 2).to_a
      assert_operator pages.size, :>=, 3
      got = pages.flat_map { |p| p.map { |s| s["recipient"] } }
      assert_equal got.uniq, got, "no record twice (#{mode})"
      assert_equal want, got.select { |r| r.end_with?("-#{tag}@example.org") }, mode
    end
    assert_equal 204, live.suppressions.delete(want.first).status
    refute_includes live.suppressions.each_item(mode: :page, limit: 50).map { |s| s["recipient"] }, want.first
  end

  def test_idempotent_replay
    key = "ruby-#{unique}"
    first = sandbox.messages.send(**test_message, idempotency_key: key)
    again = sandbox.messages.send(**test_message, idempotency_key: key)
    assert_equal first["id"], again["id"]
    refute first.idempotent_replayed?
    assert again.idempotent_replayed?
    assert_equal "true", again.header("Idempotent-Replayed")
  end

  def test_401_bad_key
    bad = Mailbolt::Client.new(api_key: "svc_live_#{'x' * 32}")
    err = assert_raises(Mailbolt::AuthenticationError) { bad.account.get }
    assert_equal 401, err.status
    assert_includes %w[INVALID_API_KEY UNAUTHORIZED], err.code
    assert err.request_id
    refute_empty err.message
  end

  def test_403_narrow_key
    narrow = Mailbolt::Client.new(api_key: ENV.fetch("MAILBOLT_NARROW_API_KEY"))
    assert narrow.account.get["id"]
    err = assert_raises(Mailbolt::PermissionDeniedError) { narrow.suppressions.list }
    assert_equal [403, "INSUFFICIENT_SCOPES"], [err.status, err.code]
    assert err.request_id
  end

  def test_404_other_tenants_message
    sent = sandbox.messages.send(**test_message)
    other = Mailbolt::Client.new(api_key: ENV.fetch("MAILBOLT_OTHER_API_KEY"))
    err = assert_raises(Mailbolt::NotFoundError) { other.messages.get(sent["id"]) }
    assert_equal [404, "NOT_FOUND"], [err.status, err.code]
  end

  def test_409_idempotency_key_reused_with_other_body
    key = "ruby-#{unique}"
    sandbox.messages.send(**test_message, idempotency_key: key)
    err = assert_raises(Mailbolt::IdempotencyConflictError) do
      sandbox.messages.send(**test_message(subject: "Another"), idempotency_key: key)
    end
    assert_kind_of Mailbolt::ConflictError, err
    assert_equal [409, "IDEMPOTENCY_CONFLICT"], [err.status, err.code]
  end

  def test_422_live_send_from_unverified_domain
    err = assert_raises(Mailbolt::UnprocessableEntityError) { live.messages.send(**test_message) }
    assert_equal [422, "DOMAIN_NOT_VERIFIED"], [err.status, err.code]
    assert_equal "example.com", err.details["domain"]
  end

  def test_suppressions_import_and_export
    tag = unique
    a, b = "imp-a-#{tag}@example.org", "imp-b-#{tag}@example.org"
    res = live.suppressions.import([{ recipient: a }, { recipient: b, reason: "unsubscribe", stream: "broadcast" }, { recipient: a }])
    assert_equal [200, 2, 1], [res.status, res["added"], res["already_present"]]
    err = assert_raises(Mailbolt::BadRequestError) do
      live.suppressions.import([{ recipient: "imp-c-#{tag}@example.org" }, { recipient: "not an address" }])
    end
    assert_equal [400, "VALIDATION_ERROR", 1], [err.status, err.code, err.details["index"]]
    csv = live.suppressions.export
    assert csv.start_with?("recipient,reason,stream\n"), csv
    assert_includes csv, "#{a},manual,\n#{b},unsubscribe,broadcast\n"
    refute_includes csv, "imp-c-#{tag}"
    assert_equal 1, live.suppressions.export(stream: "broadcast").scan(tag).size
    other = Mailbolt::Client.new(api_key: ENV.fetch("MAILBOLT_OTHER_API_KEY"))
    refute_includes other.suppressions.export, tag
    # b's entry is for broadcast only: its transactional entry is not there.
    assert_raises(Mailbolt::NotFoundError) { live.suppressions.delete(b, stream: "transactional") }
    assert_equal 204, live.suppressions.delete(b, stream: "broadcast").status
    live.suppressions.delete(a)
  end

  def test_400_validation_error
    err = assert_raises(Mailbolt::BadRequestError) { sandbox.messages.list(limit: 500) }
    assert_equal [400, "VALIDATION_ERROR"], [err.status, err.code]
    assert_equal "limit", err.details["field"]
  end

  # The limited key allows 1 request per second: two quick calls, the second gets
  # 429, waits Retry-After and succeeds. Starting just after a second boundary keeps
  # both calls in one window; should a slow machine still split them, try again.
  def test_429_is_retried_then_succeeds
    retries = []
    limited = Mailbolt::Client.new(api_key: ENV.fetch("MAILBOLT_LIMITED_API_KEY"),
                                   on_retry: ->(n, err, delay) { retries << [n, err, delay] })
    3.times do
      sleep(1.02 - (Time.now.to_f % 1))
      assert limited.account.get["id"]
      res = limited.account.get
      assert_equal 200, res.status
      break unless retries.empty?
    end
    refute_empty retries, "no 429 in three tries"
    _, err, delay = retries.first
    assert_kind_of Mailbolt::RateLimitError, err
    assert_equal "RATE_LIMIT_EXCEEDED", err.code
    assert_operator err.retry_after, :>=, 1
    assert_equal err.retry_after, delay, "the wait is Retry-After"
    assert_equal 1, err.rate_limit.limit
  end

  def test_429_without_retries_raises
    limited = Mailbolt::Client.new(api_key: ENV.fetch("MAILBOLT_LIMITED_API_KEY"), max_retries: 0)
    err = nil
    5.times do
      limited.account.get
    rescue Mailbolt::RateLimitError => e
      err = e
      break
    end
    refute_nil err, "five quick calls at 1/s never saw a 429"
    assert_equal 429, err.status
  end

  def test_other_resources_round_trip
    assert_equal "default", live.account.get["name"]
    tpl = live.templates.create(name: "welcome-#{unique}", subject: "Hi {{name}}", text: "Hello {{name}}")
    assert_equal "Hi Ann", live.templates.render(tpl["id"], data: { name: "Ann" })["subject"]
    live.templates.update(tpl["id"], subject: "Hello {{name}}")
    assert_operator live.templates.list_versions(tpl["id"]).size, :>=, 1
    assert_equal tpl["id"], live.templates.get(tpl["id"])["id"]
    hook = live.webhooks.create(url: "https://hooks.example.com/#{unique}", events: ["message.delivered"])
    assert hook["secret"]
    assert live.webhooks.rotate_secret(hook["id"])["secret"]
    assert_kind_of Array, live.webhooks.list_deliveries(hook["id"]).items
    live.webhooks.delete(hook["id"])
    assert_raises(Mailbolt::NotFoundError) { live.webhooks.get(hook["id"]) }
    key = live.api_keys.create(name: "ruby-#{unique}", scopes: ["account:read"])
    assert key["key"]
    assert_equal key["id"], live.api_keys.get(key["id"])["id"]
    live.api_keys.revoke(key["id"])
    done = live.account.audit_log(limit: 50)["data"].select { |e| e["target"] == key["id"] }.map { |e| [e["action"], e["actor_kind"]] }
    assert_equal [%w[api_key.revoke api_key], %w[api_key.create api_key]], done
    assert_kind_of Array, live.ips.list["data"]
    assert_kind_of Array, live.ips.list_pools["data"]
    assert live.analytics.summary.data
    assert_kind_of Array, live.team.list.items
    assert_kind_of Array, live.events.list(limit: 5).items
  end

  def test_examples_run_send
    env = { "MAILBOLT_API_KEY" => ENV.fetch("MAILBOLT_TEST_API_KEY"),
            "MAILBOLT_EXAMPLE_FROM" => "orders@example.com", "MAILBOLT_EXAMPLE_TO" => "ann@example.net" }
    out, err, status = Open3.capture3(env, File.expand_path("../examples/run", __dir__), "send")
    assert status.success?, err
    id = out.strip
    assert_match(/\A\h{8}-\h{4}-\h{4}-\h{4}-\h{12}\z/, id)
    assert_equal "#{id}\n", out, "the id alone on stdout"
    assert_equal id, sandbox.messages.get(id)["id"]
  end

  def test_inbound_domains_routes_and_raw
    name = "in-#{unique}.example.com"
    d = live.inbound.create_domain(name: name)
    assert_equal [201, name, "pending"], [d.status, d["name"], d["status"]]
    assert_equal %w[MX TXT], d["records"].map { |r| r["type"] }
    assert_equal name, live.inbound.get_domain(d["id"])["name"]
    assert(live.inbound.list_domains(limit: 200).any? { |x| x["id"] == d["id"] })
    hook = live.webhooks.create(url: "https://hooks.example.com/#{unique}", events: ["message.delivered"])
    r = live.inbound.create_route(domain_id: d["id"], pattern: "support", webhook_id: hook["id"])
    assert_equal [201, "support"], [r.status, r["pattern"]]
    assert_equal d["id"], live.inbound.get_route(r["id"])["domain_id"]
    assert(live.inbound.list_routes.any? { |x| x["id"] == r["id"] })
    assert_raises(Mailbolt::ConflictError) do
      live.inbound.create_route(domain_id: d["id"], pattern: "support", webhook_id: hook["id"])
    end
    other = Mailbolt::Client.new(api_key: ENV.fetch("MAILBOLT_OTHER_API_KEY"))
    assert_raises(Mailbolt::NotFoundError) { other.inbound.get_domain(d["id"]) }
    assert_raises(Mailbolt::NotFoundError) { live.inbound.raw(SecureRandom.uuid) }
    assert_equal 204, live.inbound.delete_route(r["id"]).status
    assert_equal 204, live.inbound.delete_domain(d["id"]).status
    live.webhooks.delete(hook["id"])
  end
end
