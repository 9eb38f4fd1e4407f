<?php
declare(strict_types=1);

namespace Mailbolt\Tests;

use Mailbolt\Exception\ValidationException;
use Mailbolt\Webhook;

/**
 * webhooks->update keeps the secret, webhooks->test reaches a receiver (a
 * `php -S` stub that logs what it gets) with a valid signature, and
 * messages->raw answers a message's source.
 */
final class LiveWebhookRawTest extends LiveTestCase
{
    public function testUpdateTestAndRaw(): void
    {
        $dir = sys_get_temp_dir() . '/mailbolt-php-hook-' . bin2hex(random_bytes(4));
        mkdir($dir);
        file_put_contents("$dir/script", json_encode([[200, [], 'got it']]));
        file_put_contents("$dir/log", '');
        $probe = stream_socket_server('tcp://127.0.0.1:0');
        $port = (int) substr(strrchr(stream_socket_get_name($probe, false), ':'), 1);
        fclose($probe);
        $env = getenv();
        $env['STUB_DIR'] = $dir;
        $proc = proc_open([PHP_BINARY, '-S', "127.0.0.1:$port", __DIR__ . '/fixtures/stub-router.php'],
            [0 => ['file', '/dev/null', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes, null, $env);
        try {
            for ($i = 0; $i < 100; $i++) {
                $s = @stream_socket_client("tcp://127.0.0.1:$port", $errno, $errstr, 1);
                if ($s !== false) {
                    fclose($s);
                    break;
                }
                usleep(50_000);
            }
            $url = "http://127.0.0.1:$port/hook";
            $c = $this->client();
            $w = $c->webhooks->create(['url' => "$url/old", 'events' => ['message.sent']]);
            $this->assertTrue($w['enabled']);
            $up = $c->webhooks->update($w['id'], ['url' => $url, 'events' => ['message.bounced'], 'enabled' => false]);
            $this->assertSame([$url, ['message.bounced'], false], [$up['url'], $up['events'], $up['enabled']]);
            $this->assertNull($up['secret']);
            try {
                $c->webhooks->update($w['id'], ['events' => ['message.exploded']]);
                $this->fail('an unknown event type was accepted');
            } catch (ValidationException $e) {
                $this->assertSame('VALIDATION_ERROR', $e->getErrorCode());
            }

            $res = $c->webhooks->test($w['id']);
            $this->assertSame([true, 200, 'got it', 'webhook.test'], [$res['success'], $res['status_code'], $res['response'], $res['event']]);
            $lines = array_values(array_filter(explode("\n", (string) file_get_contents("$dir/log"))));
            $this->assertCount(1, $lines);
            $got = json_decode($lines[0], true);
            (new Webhook())->verify($got['body'], $got['headers'], $w['secret']); // the secret from before the update
            $this->assertSame($res['event_id'], json_decode($got['body'], true)['id']);
        } finally {
            proc_terminate($proc);
            proc_close($proc);
            array_map('unlink', glob("$dir/*") ?: []);
            @rmdir($dir);
        }

        $m = $c->messages->send(self::message('raw source ' . self::unique()));
        $raw = $c->messages->raw($m['id']);
        $this->assertStringContainsString("Subject: raw source ", $raw);
        $to = self::message()['to'][0];
        $this->assertSame($raw, $c->messages->raw($m['id'], strtoupper($to)));
        try {
            $c->messages->raw($m['id'], 'nobody@example.net');
            $this->fail('an unknown recipient was accepted');
        } catch (ValidationException $e) {
            $this->assertSame('VALIDATION_ERROR', $e->getErrorCode());
        }
    }
}
