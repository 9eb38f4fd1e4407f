<?php
declare(strict_types=1);

namespace Mailbolt\Tests;

use Mailbolt\Exception\StaleWebhookException;
use Mailbolt\Exception\WebhookException;
use Mailbolt\Webhook;
use PHPUnit\Framework\TestCase;

/** Webhook verification against testdata/webhooks/signature.json (no server needed). */
final class WebhookTest extends TestCase
{
    /** @var array<string, mixed> */
    private static array $v;

    public static function setUpBeforeClass(): void
    {
        $path = getenv('MAILBOLT_WEBHOOK_VECTOR') ?: __DIR__ . '/../../../testdata/webhooks/signature.json';
        self::$v = json_decode((string) file_get_contents($path), true, 512, JSON_THROW_ON_ERROR);
    }

    private static function clockAt(int $now): Webhook
    {
        return new Webhook(static fn (): int => $now);
    }

    public function testValidVector(): void
    {
        $v = self::$v;
        self::clockAt($v['timestamp'])->verify($v['body'], ['X-Service-Signature' => $v['header'], 'X-Service-Timestamp' => (string) $v['timestamp']], $v['secret']);
        $this->assertTrue(self::clockAt($v['timestamp'] + 299)->isValid($v['body'], ['x-service-signature' => $v['header']], $v['secret']));
        $this->assertTrue(self::clockAt($v['timestamp'] - 300)->isValid($v['body'], ['HTTP_X_SERVICE_SIGNATURE' => $v['header']], $v['secret']));
        $this->assertTrue(self::clockAt($v['timestamp'])->isValid($v['body'], ['X-Service-Signature' => [$v['header']]], $v['secret']));
    }

    public function testDigestMatchesVector(): void
    {
        $v = self::$v;
        $this->assertSame($v['signature'], hash_hmac('sha256', $v['timestamp'] . '.' . $v['body'], base64_decode($v['secret'], true)));
    }

    public function testTamperedBody(): void
    {
        $v = self::$v;
        $tampered = str_replace('m1', 'm2', $v['body']);
        $this->assertNotSame($v['body'], $tampered);
        $this->expectException(WebhookException::class);
        self::clockAt($v['timestamp'])->verify($tampered, ['X-Service-Signature' => $v['header']], $v['secret']);
    }

    public function testTrailingNewlineIsTampering(): void
    {
        $v = self::$v;
        $this->assertFalse(self::clockAt($v['timestamp'])->isValid($v['body'] . "\n", ['X-Service-Signature' => $v['header']], $v['secret']));
    }

    public function testStaleTimestamp(): void
    {
        $v = self::$v;
        foreach ([$v['timestamp'] + 301, $v['timestamp'] - 301, time()] as $now) {
            try {
                self::clockAt($now)->verify($v['body'], ['X-Service-Signature' => $v['header']], $v['secret']);
                $this->fail("accepted at $now");
            } catch (StaleWebhookException $e) {
                $this->assertSame(400, $e->getHttpStatus());
            }
        }
    }

    public function testRotatedSecret(): void
    {
        $v = self::$v;
        $w = self::clockAt($v['timestamp']);
        $rotation = ['X-Service-Signature' => $v['header_during_rotation']];
        // The receiver holds only the new secret, only the old one, or both.
        $this->assertTrue($w->isValid($v['body'], $rotation, $v['secret']));
        $this->assertTrue($w->isValid($v['body'], $rotation, $v['previous_secret']));
        $this->assertTrue($w->isValid($v['body'], $rotation, $v['previous_secret'], $v['secret']));
        // A request signed with the previous secret alone, the receiver holding both.
        $old = ['X-Service-Signature' => 't=' . $v['timestamp'] . ',v1=' . $v['previous_signature']];
        $this->assertTrue($w->isValid($v['body'], $old, $v['secret'], $v['previous_secret']));
        $this->assertFalse($w->isValid($v['body'], $old, $v['secret']));
    }

    public function testWrongSecretAndMalformedHeaders(): void
    {
        $v = self::$v;
        $w = self::clockAt($v['timestamp']);
        $other = base64_encode(str_repeat("\x07", 32));
        $this->assertFalse($w->isValid($v['body'], ['X-Service-Signature' => $v['header']], $other));
        // The Base64 text itself as the key is the classic mistake: it must not verify.
        $this->assertFalse($w->isValid($v['body'], ['X-Service-Signature' => $v['header']], base64_encode($v['secret'])));
        $this->assertFalse($w->isValid($v['body'], [], $v['secret']));
        $this->assertFalse($w->isValid($v['body'], ['X-Service-Signature' => 'v1=' . $v['signature']], $v['secret']));
        $this->assertFalse($w->isValid($v['body'], ['X-Service-Signature' => 't=' . $v['timestamp']], $v['secret']));
        $this->assertFalse($w->isValid($v['body'], ['X-Service-Signature' => 't=abc,v1=' . $v['signature']], $v['secret']));
        $this->assertFalse($w->isValid($v['body'], ['X-Service-Signature' => $v['header'], 'X-Service-Timestamp' => '1'], $v['secret']));
        try {
            $w->verify($v['body'], [], $v['secret']);
            $this->fail('no header accepted');
        } catch (WebhookException $e) {
            $this->assertSame(401, $e->getHttpStatus());
        }
    }

    public function testToleranceCannotBeDisabled(): void
    {
        $this->expectException(\InvalidArgumentException::class);
        new Webhook(null, 0);
    }
}
