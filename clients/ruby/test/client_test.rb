# frozen_string_literal: true

require_relative "test_helper"

# Client behaviour against a scripted local server: retries, idempotency keys,
# headers, errors, configuration. Runs without the real server.
class ClientTest < Minitest::Test
  UNAVAILABLE = '{"error":{"code":"SERVICE_UNAVAILABLE","message":"busy"}}'
  ACCEPTED = '{"id":"m-1","status":"queued"}'

  def setup
    @slept = []
    @servers = []
  end

  def teardown
    @servers.each(&:close)
  end

  def fake(*answers)
    server = MailboltTest::FakeServer.new(answers)
    @servers << server
    server
  end

  def client(server, **opts)
    Mailbolt::Client.new(api_key: "svc_test_x", base_url: server.url, sleeper: ->(s) { @slept << s }, **opts)
  end

  def test_send_retries_transient_errors_with_one_idempotency_key
    server = fake([503, { "Retry-After" => "2" }, UNAVAILABLE],
                  [504, {}, '{"error":{"code":"GATEWAY_TIMEOUT","message":"slow"}}'],
                  [429, { "Retry-After" => "1" }, '{"error":{"code":"RATE_LIMIT_EXCEEDED","message":"slow down"}}'],
                  [202, { "X-RateLimit-Limit" => "10", "X-RateLimit-Remaining" => "9", "X-RateLimit-Reset" => "1795320001" }, ACCEPTED])
    res = client(server).messages.send(from: "a@example.com", to: ["b@example.net"], subject: "s", text: "t")
    assert_equal "m-1", res["id"]
    assert_equal 202, res.status
    assert_equal Mailbolt::RateLimit.new(limit: 10, remaining: 9, reset: 1_795_320_001), res.rate_limit
    reqs = server.recorded
    assert_equal 4, reqs.size
    keys = reqs.map { |r| r.headers["idempotency-key"] }.uniq
    assert_equal 1, keys.size
    assert_match(/\A\h{8}-\h{4}-4\h{3}-[89ab]\h{3}-\h{12}\z/, keys.first)
    assert_equal 1, reqs.map(&:body).uniq.size, "every retry sends the same bytes"
    assert_equal 2, @slept[0], "Retry-After replaces the backoff"
    assert_operator @slept[1], :>, 0
    assert_equal 1, @slept[2]
    assert_equal "mailbolt-ruby/0.1.0", reqs.first.headers["user-agent"]
    assert_equal "svc_test_x", reqs.first.headers["x-api-key"]
    assert_equal({ "from" => "a@example.com", "to" => ["b@example.net"], "subject" => "s", "text" => "t" },
                 JSON.parse(reqs.first.body))
  end

  def test_caller_idempotency_key_is_used
    server = fake([503, {}, UNAVAILABLE], [202, {}, ACCEPTED])
    client(server).messages.send_batch([{ from: "a@example.com", to: ["b@example.net"] }], idempotency_key: "mine-1")
    assert_equal %w[mine-1 mine-1], server.recorded.map { |r| r.headers["idempotency-key"] }
  end

  def test_gives_up_after_max_retries
    server = fake(*Array.new(3) { [503, {}, UNAVAILABLE] })
    err = assert_raises(Mailbolt::ServiceUnavailableError) { client(server, max_retries: 2).account.get }
    assert_equal "SERVICE_UNAVAILABLE", err.code
    assert_equal 3, server.recorded.size
    assert_equal 2, @slept.size
  end

  def test_backoff_grows_exponentially_with_jitter
    c = Mailbolt::Client.new(base_url: "http://127.0.0.1:1", backoff_base: 1, backoff_max: 5)
    20.times do
      assert_includes 0.5..1.0, c.retry_delay(0, nil)
      assert_includes 1.0..2.0, c.retry_delay(1, nil)
      assert_includes 2.5..5.0, c.retry_delay(5, nil)
    end
    assert_equal 7, c.retry_delay(0, 7)
  end

  def test_other_errors_are_not_retried
    [[500, "INTERNAL_ERROR", Mailbolt::ServerError],
     [429, "QUOTA_EXCEEDED", Mailbolt::RateLimitError],
     [400, "VALIDATION_ERROR", Mailbolt::BadRequestError],
     [409, "IDEMPOTENCY_CONFLICT", Mailbolt::IdempotencyConflictError]].each do |status, code, klass|
      server = fake([status, { "X-Request-Id" => "req-#{status}" },
                     JSON.generate(error: { code: code, message: "no", details: { field: "to" } })], [200, {}, "{}"])
      err = assert_raises(klass) { client(server).account.get }
      assert_equal [status, code, "no", { "field" => "to" }, "req-#{status}"],
                   [err.status, err.code, err.message, err.details, err.request_id]
      assert_equal 1, server.recorded.size, code
    end
    assert_empty @slept
  end

  def test_get_has_no_idempotency_key_and_query_is_encoded
    server = fake([200, {}, '{"data":[],"limit":2,"has_more":false}'])
    client(server).messages.list(limit: 2, recipient: "a+b@example.com", status: nil)
    req = server.recorded.first
    assert_equal "/v1/messages?limit=2&recipient=a%2Bb%40example.com", req.path
    assert_nil req.headers["idempotency-key"]
  end

  def test_path_segments_are_escaped
    server = fake([204, {}, ""])
    res = client(server).suppressions.delete("a+b@example.com")
    assert_nil res.data
    assert_equal "/v1/suppressions/a%2Bb%40example.com", server.recorded.first.path
  end

  def test_page_mode_follows_link_header
    link = ->(n, last) { (n < last ? ["</v1/team?limit=1&page=#{n + 1}>; rel=\"next\""] : []).push("</v1/team?limit=1&page=1>; rel=\"first\"").join(", ") }
    server = fake([200, { "Link" => link.call(1, 2) }, '{"data":[{"n":1}],"page":1,"limit":1,"total":2}'],
                  [200, { "Link" => link.call(2, 2) }, '{"data":[{"n":2}],"page":2,"limit":1,"total":2}'])
    items = client(server).team.each_item(mode: :page, limit: 1).to_a
    assert_equal [1, 2], items.map { |i| i["n"] }
    assert_equal ["/v1/team?limit=1&page=1", "/v1/team?limit=1&page=2"], server.recorded.map(&:path)
  end

  def test_page_and_cursor_together_is_refused
    c = Mailbolt::Client.new(base_url: "http://127.0.0.1:1")
    assert_raises(ArgumentError) { c.messages.list(page: 1, cursor: "x") }
    assert_raises(ArgumentError) { c.messages.pages(mode: :sideways).first }
  end

  def test_connection_errors_are_typed
    port = TCPServer.open("127.0.0.1", 0) { |s| s.addr[1] }
    c = Mailbolt::Client.new(base_url: "http://127.0.0.1:#{port}")
    assert_raises(Mailbolt::ConnectionError) { c.account.get }
  end

  def test_configuration_from_environment
    saved = ENV.to_h.slice("MAILBOLT_API_KEY", "MAILBOLT_BASE_URL", "MAILBOLT_CA_FILE")
    ENV["MAILBOLT_API_KEY"] = "svc_live_env"
    ENV["MAILBOLT_BASE_URL"] = "https://mail.example.test/"
    ENV["MAILBOLT_CA_FILE"] = "/nonexistent/ca.pem"
    assert_raises(Mailbolt::ConfigurationError) { Mailbolt::Client.new }
    ENV.delete("MAILBOLT_CA_FILE")
    c = Mailbolt::Client.new
    assert_equal "https://mail.example.test", c.base_url
    http = c.__send__(:http_for, URI("https://mail.example.test/v1/account"))
    assert_equal OpenSSL::SSL::TLS1_2_VERSION, http.min_version
    assert_equal OpenSSL::SSL::VERIFY_PEER, http.verify_mode
    ENV.delete("MAILBOLT_BASE_URL")
    assert_raises(Mailbolt::ConfigurationError) { Mailbolt::Client.new }
  ensure
    %w[MAILBOLT_API_KEY MAILBOLT_BASE_URL MAILBOLT_CA_FILE].each { |k| saved.key?(k) ? ENV[k] = saved[k] : ENV.delete(k) }
  end

  def test_operations_map_names_existing_methods
    map = JSON.parse(File.read(File.expand_path("../operations.json", __dir__)))
    assert_equal 58, map.size
    c = Mailbolt::Client.new(base_url: "http://127.0.0.1:1")
    map.each do |op, name|
      _, resource, method = name.split(".")
      assert c.respond_to?(resource), "#{op}: client.#{resource}"
      assert c.public_send(resource).respond_to?(method), "#{op}: #{name}"
    end
  end
end
