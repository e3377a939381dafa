"""boto3 and the AWS CLI against `ernic s3 serve`: the judges of the S3 API.

Usage: stock_clients.py ENDPOINT ACCESS_KEY SECRET_KEY WORKDIR

Every check compares bytes or the answer S3 documents; the first failure
raises, and the script exits non-zero with its traceback.
"""

import hashlib
import os
import subprocess
import sys
import urllib.request

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint, ak, sk, work = sys.argv[1:5]


def client(secret=sk):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=ak,
        aws_secret_access_key=secret,
        region_name="us-east-1",
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def pattern(n, seed):
    out = bytearray()
    block = hashlib.sha256(str(seed).encode()).digest()
    while len(out) < n:
        out += block
        block = hashlib.sha256(block).digest()
    return bytes(out[:n])


def error_code(fn):
    try:
        fn()
    except ClientError as e:
        return e.response["Error"]["Code"]
    raise AssertionError("the call succeeded")


s3 = client()
s3.create_bucket(Bucket="boto")
assert "boto" in [b["Name"] for b in s3.list_buckets()["Buckets"]]
s3.head_bucket(Bucket="boto")

# put, get whole and ranged, head
body = pattern(1 << 20, 1)
put = s3.put_object(Bucket="boto", Key="dir/a.bin", Body=body, ContentType="application/x-ernic",
                    Metadata={"colour": "blue"})
assert put["ETag"] == '"%s"' % hashlib.md5(body).hexdigest(), put["ETag"]
got = s3.get_object(Bucket="boto", Key="dir/a.bin")
assert got["Body"].read() == body
assert got["ContentType"] == "application/x-ernic"
assert got["Metadata"] == {"colour": "blue"}, got["Metadata"]
part = s3.get_object(Bucket="boto", Key="dir/a.bin", Range="bytes=100-199")
assert part["ResponseMetadata"]["HTTPStatusCode"] == 206
assert part["Body"].read() == body[100:200]
assert part["ContentRange"] == "bytes 100-199/1048576", part["ContentRange"]
head = s3.head_object(Bucket="boto", Key="dir/a.bin")
assert head["ContentLength"] == len(body)
assert error_code(lambda: s3.get_object(Bucket="boto", Key="dir/a.bin", Range="bytes=2000000-")) == "InvalidRange"
assert error_code(lambda: s3.head_object(Bucket="boto", Key="missing")) == "404"
assert error_code(lambda: s3.get_object(Bucket="boto", Key="missing")) == "NoSuchKey"
assert error_code(lambda: s3.get_object(Bucket="boto", Key="dir/a.bin", IfNoneMatch=put["ETag"])) == "304"

# list with prefix, delimiter and pagination over 2,500 keys
for i in range(2500):
    s3.put_object(Bucket="boto", Key="many/%02d/%04d" % (i % 10, i), Body=b"k%d" % i)
pages = list(s3.get_paginator("list_objects_v2").paginate(Bucket="boto", Prefix="many/"))
keys = [o["Key"] for p in pages for o in p.get("Contents", [])]
assert len(pages) == 3 and len(keys) == 2500 and keys == sorted(keys), (len(pages), len(keys))
roll = s3.list_objects_v2(Bucket="boto", Prefix="many/", Delimiter="/")
assert [p["Prefix"] for p in roll["CommonPrefixes"]] == ["many/%02d/" % d for d in range(10)]
v1 = list(s3.get_paginator("list_objects").paginate(Bucket="boto", Prefix="many/03/", PaginationConfig={"PageSize": 100}))
assert sum(len(p.get("Contents", [])) for p in v1) == 250 and len(v1) == 3

# copy, delete, multi-delete
s3.copy_object(Bucket="boto", Key="copy.bin", CopySource={"Bucket": "boto", "Key": "dir/a.bin"})
assert s3.get_object(Bucket="boto", Key="copy.bin")["Body"].read() == body
s3.delete_object(Bucket="boto", Key="copy.bin")
assert error_code(lambda: s3.head_object(Bucket="boto", Key="copy.bin")) == "404"
gone = s3.delete_objects(Bucket="boto", Delete={"Objects": [{"Key": k} for k in keys[:1000]]})
assert len(gone["Deleted"]) == 1000 and not gone.get("Errors")
assert s3.list_objects_v2(Bucket="boto", Prefix="many/")["KeyCount"] == 1000
assert error_code(lambda: s3.delete_bucket(Bucket="boto")) == "BucketNotEmpty"

# presigned GET, through a plain HTTP client
url = s3.generate_presigned_url("get_object", Params={"Bucket": "boto", "Key": "dir/a.bin"}, ExpiresIn=300)
with urllib.request.urlopen(url) as r:
    assert r.read() == body
sig = url.split("X-Amz-Signature=")[1][:64]
bad = url.replace(sig, sig[:-1] + ("0" if sig[-1] != "0" else "1"))
# boto3's default for a custom endpoint: a SigV2 presigned URL
legacy = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
                      region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))
v2url = legacy.generate_presigned_url("get_object", Params={"Bucket": "boto", "Key": "dir/a.bin"}, ExpiresIn=300)
assert "AWSAccessKeyId=" in v2url or "X-Amz-Signature=" in v2url, v2url
with urllib.request.urlopen(v2url) as r:
    assert r.read() == body
try:
    urllib.request.urlopen(bad)
    raise AssertionError("a tampered presigned URL was served")
except urllib.error.HTTPError as e:
    assert e.code == 403, e.code

# multipart upload of 70 MiB through boto3's transfer manager
big = os.path.join(work, "big.bin")
with open(big, "wb") as f:
    f.write(pattern(70 << 20, 7))
want = hashlib.sha256(open(big, "rb").read()).hexdigest()
s3.upload_file(big, "boto", "big.bin", Config=TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=8 << 20))
head = s3.head_object(Bucket="boto", Key="big.bin")
assert head["ContentLength"] == 70 << 20 and head["ETag"].endswith('-9"'), head["ETag"]
back = os.path.join(work, "back.bin")
s3.download_file("boto", "big.bin", back)
assert hashlib.sha256(open(back, "rb").read()).hexdigest() == want

# versions (none kept: each object is its null version) and ACLs (the owner's)
vs = s3.list_object_versions(Bucket="boto", Prefix="dir/")
assert [(v["Key"], v["VersionId"], v["IsLatest"]) for v in vs["Versions"]] == [("dir/a.bin", "null", True)], vs
acl = s3.get_bucket_acl(Bucket="boto")
assert [g["Permission"] for g in acl["Grants"]] == ["FULL_CONTROL"], acl
assert s3.get_object_acl(Bucket="boto", Key="dir/a.bin")["Owner"]["ID"] == acl["Owner"]["ID"]
s3.put_object_acl(Bucket="boto", Key="dir/a.bin", ACL="private")
assert error_code(lambda: s3.put_bucket_acl(Bucket="boto", ACL="public-read")) == "NotImplemented"

# a wrong secret is refused
assert error_code(lambda: client("wrong").list_buckets()) == "SignatureDoesNotMatch"
assert error_code(lambda: client("wrong").put_object(Bucket="boto", Key="x", Body=b"x")) == "SignatureDoesNotMatch"

# the AWS CLI
env = dict(os.environ, AWS_ACCESS_KEY_ID=ak, AWS_SECRET_ACCESS_KEY=sk, AWS_DEFAULT_REGION="us-east-1",
           AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull, AWS_EC2_METADATA_DISABLED="true")


def aws(*args):
    return subprocess.run(["aws", "--endpoint-url", endpoint, *args], env=env, check=True,
                          capture_output=True, text=True).stdout


aws("s3", "mb", "s3://cli")
aws("s3", "cp", big, "s3://cli/big.bin")
cli_back = os.path.join(work, "cli-back.bin")
aws("s3", "cp", "s3://cli/big.bin", cli_back)
assert hashlib.sha256(open(cli_back, "rb").read()).hexdigest() == want
assert "big.bin" in aws("s3", "ls", "s3://cli/")
head = aws("s3api", "head-object", "--bucket", "cli", "--key", "big.bin")
assert '"ContentLength": 73400320' in head, head
aws("s3", "rm", "s3://cli/big.bin")
assert "big.bin" not in aws("s3", "ls", "s3://cli/")
bad_env = dict(env, AWS_SECRET_ACCESS_KEY="wrong")
r = subprocess.run(["aws", "--endpoint-url", endpoint, "s3", "ls"], env=bad_env, capture_output=True, text=True)
assert r.returncode != 0 and "SignatureDoesNotMatch" in r.stderr, r.stderr
print("stock clients: all checks passed")
