# Source from the repo root on a GPU machine that has no egglog and no install of this clone:
#   . bench/scripts/device_env.sh
# installs the carried cp312 wheels (${WHEELS:-.whl}/: egglog 13.2.0 and what it imports at start that
# the image lacks) into /tmp/site, and makes the clone importable under its installed names
# (eqsat_rules -> rules/, eqsat_torch -> fx_bridge/) with the backend's entry point, without pip
# building the clone (the machine reaches no package index for setuptools).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  "${WHEELS:-.whl}"/*.whl || return 1
mkdir -p /tmp/alias/eqsat-0.dev0.dist-info
ln -sfn "$PWD/rules" /tmp/alias/eqsat_rules
ln -sfn "$PWD/fx_bridge" /tmp/alias/eqsat_torch
printf 'Metadata-Version: 2.1\nName: eqsat\nVersion: 0.dev0\n' > /tmp/alias/eqsat-0.dev0.dist-info/METADATA
printf '[torch_dynamo_backends]\neqsat = eqsat_torch.backend:eqsat_compile\n' \
  > /tmp/alias/eqsat-0.dev0.dist-info/entry_points.txt
export PYTHONPATH=/tmp/site:/tmp/alias:$PWD PYTHONUNBUFFERED=1 TQDM_DISABLE=1
