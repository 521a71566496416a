// The plugin's HMAC-SHA256 gives what Node's crypto gives (and so what the server's Python gives).
import { createHash, createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { hex, hmacSha256, sha256 } from "../src/hmac";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("hmacSha256", () => {
  it("matches Node's crypto for messages and keys of every length around the block size", () => {
    for (const n of [0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000]) {
      const text = "x".repeat(n);
      expect(hex(sha256(bytes(text)))).toBe(createHash("sha256").update(text).digest("hex"));
      for (const key of ["", "k", "tok-1234567890abcdef", "K".repeat(64), "K".repeat(65), "ключ".repeat(30)]) {
        expect(hex(hmacSha256(bytes(key), bytes(text)))).toBe(createHmac("sha256", key).update(text).digest("hex"));
      }
    }
  });

  it("gives the RFC 4231 test case 2", () => {
    expect(hex(hmacSha256(bytes("Jefe"), bytes("what do ya want for nothing?"))))
      .toBe("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  });
});
