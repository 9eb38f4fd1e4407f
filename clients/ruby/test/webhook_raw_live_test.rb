# frozen_string_literal: true

require_relative "test_helper"
require "json"
require "socket"

# webhooks.update keeps the secret, webhooks.test reaches a receiver (a
# one-request TCP server) with a valid signature, and messages.raw answers a
# message's source. Against the server of clients/harness.sh.
class WebhookRawLiveTest < Minitest::Test
  include MailboltTest::Live

  # Serves one HTTP request: answers "got it" and hands back the body and the
  # headers (lower-case names).
  def receiver
    server = TCPServer.new("127.0.0.1", 0)
    got = Queue.new
    Thread.new do
      conn = server.accept
      conn.gets # request line
      headers = {}
      while (line = conn.gets) && line != "\r\n"
        name, value = line.split(":", 2)
        headers[name.downcase] = value.strip
      end
      body = conn.read(headers["content-length"].to_i)
      conn.write("HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\ngot it")
      conn.close
      got << [body, headers]
    ensure
      server.close
    end
    ["http://127.0.0.1:#{server.addr[1]}/hook", got]
  end

  def test_update_test_and_raw
    url, got = receiver
    w = sandbox.webhooks.create(url: "#{url}/old", events: ["message.sent"])
    assert_equal true, w["enabled"]
    up = sandbox.webhooks.update(w["id"], url: url, events: ["message.bounced"], enabled: false)
    assert_equal [url, ["message.bounced"], false, nil], [up["url"], up["events"], up["enabled"], up["secret"]]
    err = assert_raises(Mailbolt::BadRequestError) { sandbox.webhooks.update(w["id"], events: ["message.exploded"]) }
    assert_equal "VALIDATION_ERROR", err.code

    res = sandbox.webhooks.test(w["id"])
    assert_equal [true, 200, "got it", "webhook.test"], [res["success"], res["status_code"], res["response"], res["event"]]
    body, headers = got.pop
    assert Mailbolt::Webhook.verify(body, headers, w["secret"]) # the secret from before the update
    assert_equal res["event_id"], JSON.parse(body)["id"]

    m = sandbox.messages.send(**test_message(subject: "Raw source"))
    raw = sandbox.messages.raw(m["id"])
    assert_includes raw, "Subject: Raw source\r\n"
    assert_equal raw, sandbox.messages.raw(m["id"], recipient: "ANN@example.net")
    err = assert_raises(Mailbolt::BadRequestError) { sandbox.messages.raw(m["id"], recipient: "nobody@example.net") }
    assert_equal "VALIDATION_ERROR", err.code
  end
end
