# frozen_string_literal: true

require_relative "test_helper"
require "open3"

# examples/run verify with the vector of testdata/webhooks/signature.json.
class ExamplesVerifyTest < Minitest::Test
  RUN = File.expand_path("../examples/run", __dir__)

  def run_verify(body, secret:, signature:, now:)
    v = MailboltTest.vector
    env = { "MAILBOLT_EXAMPLE_WEBHOOK_SECRET" => secret, "MAILBOLT_EXAMPLE_SIGNATURE" => signature,
            "MAILBOLT_EXAMPLE_TIMESTAMP" => v["timestamp"].to_s, "MAILBOLT_EXAMPLE_NOW" => now.to_s }
    Open3.capture3(env, RUN, "verify", stdin_data: body, binmode: true)
  end

  def test_verify_vector
    v = MailboltTest.vector
    [v["header"], v["signature"], v["header_during_rotation"]].each do |sig|
      out, err, status = run_verify(v["body"], secret: v["secret"], signature: sig, now: v["timestamp"])
      assert_equal ["valid\n", 0], [out, status.exitstatus], err
    end
    out, _, status = run_verify(v["body"], secret: "#{v['secret']},#{v['previous_secret']}",
                                signature: v["previous_signature"], now: v["timestamp"])
    assert_equal ["valid\n", 0], [out, status.exitstatus]
  end

  def test_verify_refuses
    v = MailboltTest.vector
    [[v["body"].sub("m1", "m9"), v["timestamp"]], [v["body"], v["timestamp"] + 301]].each do |body, now|
      out, _, status = run_verify(body, secret: v["secret"], signature: v["header"], now: now)
      assert_equal ["invalid\n", 1], [out, status.exitstatus]
    end
  end
end
