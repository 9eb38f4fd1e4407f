# frozen_string_literal: true

require_relative "test_helper"
require "tmpdir"

# HTTPS with an extra trusted root from ca_file / MAILBOLT_CA_FILE, and the
# TLS 1.2 floor, against a local TLS server with a certificate made on the fly.
class TLSTest < Minitest::Test
  def setup
    @dir = Dir.mktmpdir
    @ca_file, @ctx = MailboltTest::TestCA.make(@dir)
    @servers = []
  end

  def teardown
    @servers.each(&:close)
    FileUtils.remove_entry(@dir)
  end

  def server(ctx = @ctx)
    s = MailboltTest::FakeServer.new([[200, {}, '{"id":"acct"}']], tls: ctx)
    @servers << s
    s
  end

  def test_call_over_https_trusting_ca_file
    s = server
    assert_equal "acct", Mailbolt::Client.new(api_key: "k", base_url: s.url, ca_file: @ca_file).account.get["id"]
  end

  def test_ca_file_from_environment
    s = server
    saved = ENV["MAILBOLT_CA_FILE"]
    ENV["MAILBOLT_CA_FILE"] = @ca_file
    assert_equal "acct", Mailbolt::Client.new(api_key: "k", base_url: s.url).account.get["id"]
  ensure
    saved ? ENV["MAILBOLT_CA_FILE"] = saved : ENV.delete("MAILBOLT_CA_FILE")
  end

  def test_unknown_ca_is_refused
    s = server
    saved = ENV.delete("MAILBOLT_CA_FILE")
    assert_raises(Mailbolt::ConnectionError) { Mailbolt::Client.new(api_key: "k", base_url: s.url).account.get }
  ensure
    ENV["MAILBOLT_CA_FILE"] = saved if saved
  end

  def test_server_below_tls_1_2_is_refused
    old = OpenSSL::SSL::SSLContext.new
    old.cert = @ctx.cert
    old.key = @ctx.key
    old.max_version = OpenSSL::SSL::TLS1_1_VERSION
    s = server(old)
    assert_raises(Mailbolt::ConnectionError) do
      Mailbolt::Client.new(api_key: "k", base_url: s.url, ca_file: @ca_file).account.get
    end
  end
end
