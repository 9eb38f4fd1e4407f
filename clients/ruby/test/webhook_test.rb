# frozen_string_literal: true

require_relative "test_helper"

# Webhook verification against testdata/webhooks/signature.json (spec §6).
class WebhookTest < Minitest::Test
  def v = MailboltTest.vector
  def headers(sig = v["header"]) = { "X-Service-Signature" => sig, "X-Service-Timestamp" => v["timestamp"].to_s }

  def test_valid_vector
    assert Mailbolt::Webhook.verify(v["body"], headers, v["secret"], now: v["timestamp"])
  end

  def test_sign_reproduces_vector
    assert_equal v["header"], Mailbolt::Webhook.sign(v["body"], v["secret"], v["timestamp"])
  end

  def test_header_lookup_any_case_and_rack_env
    assert Mailbolt::Webhook.valid?(v["body"], { "x-service-signature" => v["header"] }, v["secret"], now: v["timestamp"])
    assert Mailbolt::Webhook.valid?(v["body"], { "HTTP_X_SERVICE_SIGNATURE" => v["header"] }, v["secret"], now: v["timestamp"])
    assert Mailbolt::Webhook.valid?(v["body"], v["header"], v["secret"], now: v["timestamp"])
  end

  def test_tampered_body
    err = assert_raises(Mailbolt::InvalidSignatureError) do
      Mailbolt::Webhook.verify(v["body"].sub("m1", "m2"), headers, v["secret"], now: v["timestamp"])
    end
    assert_equal 401, err.status
    refute Mailbolt::Webhook.valid?(v["body"] + "\n", headers, v["secret"], now: v["timestamp"])
  end

  def test_stale_timestamp_both_directions
    [301, -301, 10_000].each do |offset|
      err = assert_raises(Mailbolt::StaleSignatureError) do
        Mailbolt::Webhook.verify(v["body"], headers, v["secret"], now: v["timestamp"] + offset)
      end
      assert_equal 400, err.status
    end
    # Within the 300 s tolerance, either side.
    assert Mailbolt::Webhook.verify(v["body"], headers, v["secret"], now: v["timestamp"] + 300)
    assert Mailbolt::Webhook.verify(v["body"], headers, v["secret"], now: Time.at(v["timestamp"] - 300))
    assert Mailbolt::Webhook.verify(v["body"], headers, v["secret"], now: -> { v["timestamp"] + 5 })
  end

  def test_rotation_several_v1_and_several_secrets
    h = headers(v["header_during_rotation"])
    assert Mailbolt::Webhook.verify(v["body"], h, v["secret"], now: v["timestamp"])
    assert Mailbolt::Webhook.verify(v["body"], h, v["previous_secret"], now: v["timestamp"])
    # The receiver holds both secrets; the header carries only the old signature.
    old_only = "t=#{v['timestamp']},v1=#{v['previous_signature']}"
    assert Mailbolt::Webhook.verify(v["body"], headers(old_only), v["secret"], v["previous_secret"], now: v["timestamp"])
    assert Mailbolt::Webhook.verify(v["body"], headers(old_only), [v["secret"], v["previous_secret"]], now: v["timestamp"])
    # A secret that signed neither is refused.
    other = [("\x07" * 32)].pack("m0")
    refute Mailbolt::Webhook.valid?(v["body"], h, other, now: v["timestamp"])
  end

  def test_malformed_headers_are_invalid
    ["", "v1=#{v['signature']}", "t=#{v['timestamp']}", "t=12a,v1=#{v['signature']}",
     "t=#{v['timestamp']},v1=#{v['signature'][0..-2]}", "t=#{v['timestamp']},v2=#{v['signature']}"].each do |sig|
      assert_raises(Mailbolt::InvalidSignatureError, sig) do
        Mailbolt::Webhook.verify(v["body"], { "X-Service-Signature" => sig }, v["secret"], now: v["timestamp"])
      end
    end
    assert_raises(Mailbolt::InvalidSignatureError) { Mailbolt::Webhook.verify(v["body"], {}, v["secret"], now: v["timestamp"]) }
  end

  def test_timestamp_header_must_match_t
    h = headers.merge("X-Service-Timestamp" => (v["timestamp"] + 1).to_s)
    refute Mailbolt::Webhook.valid?(v["body"], h, v["secret"], now: v["timestamp"])
  end

  def test_configuration_errors
    assert_raises(ArgumentError) { Mailbolt::Webhook.verify(v["body"], headers, now: v["timestamp"]) }
    assert_raises(ArgumentError) { Mailbolt::Webhook.verify(v["body"], headers, "not base64!", now: v["timestamp"]) }
    assert_raises(ArgumentError) { Mailbolt::Webhook.verify(v["body"], headers, v["secret"], tolerance: 0) }
  end
end
